import { describe, expect, it } from "vitest";
import type { BallotStore } from "@harness-s/core/voting";

/** What every BallotStore must do; `fresh` returns an empty store. */
export function ballotStoreContract(name: string, fresh: () => Promise<{ ballots: BallotStore }>): void {
  describe(`BallotStore contract: ${name}`, () => {
    it("ballots: keyed by (ballot key, voter), the first ballot wins", async () => {
      const s = await fresh();
      expect(await s.ballots.put("b1", { voterId: "v1", ranking: ["a", "b"], scores: { a: 2, b: 1 } })).toBe("stored");
      expect(await s.ballots.put("b1", { voterId: "v1", ranking: ["b", "a"] })).toBe("duplicate");
      expect(await s.ballots.put("b1", { voterId: "v2", ranking: ["b"] })).toBe("stored");
      expect((await s.ballots.get("b1", "v1"))!.ranking).toEqual(["a", "b"]);
      expect((await s.ballots.get("b1", "v2"))!.ranking).toEqual(["b"]);
      expect(await s.ballots.get("b2", "v1")).toBeUndefined();
    });
  });
}
