import { describe, expect, it } from "vitest";
import { newApiKey, type ApiKeyStore } from "@harness-s/core/access";

/** What every ApiKeyStore must do; `fresh` returns an empty store. */
export function apiKeyStoreContract(name: string, fresh: () => Promise<{ keys: ApiKeyStore }>): void {
  describe(`ApiKeyStore contract: ${name}`, () => {
    it("api keys: found by the hash of the secret only", async () => {
      const s = await fresh();
      const { record } = newApiKey("k1", ["route"], 5);
      await s.keys.put(record);
      expect(await s.keys.findByHash(record.hash)).toEqual(record);
      expect(await s.keys.findByHash("0".repeat(64))).toBeUndefined();
    });
  });
}
