import { describe, expect, it } from "vitest";
import { newApiKey } from "@harness-s/core/access";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";

// Issue 67 item 14: a query's whole numbers are plain decimal digits. `Number()` takes `0x10`,
// ` 5`, `2e1` and `5.0`; each of them is a 400 naming the parameter, not a page of 16 or 20.

describe("a query's numbers", () => {
  it("are refused unless written in decimal digits, on every list that takes one", async () => {
    const deps = memoryApiDeps();
    const { secret, record } = newApiKey("k", ["experiments", "rescues"]);
    await deps.keys.put(record);
    const app = createApp(deps);
    const get = async (path: string) => {
      const res = await app.request(path, { headers: { authorization: `Bearer ${secret}` } });
      return [res.status, JSON.stringify(await res.json())] as const;
    };
    for (const bad of ["0x10", "%205", "2e1", "5.0", "+5", "-1", "1e400"]) {
      for (const path of [
        `/v1/experiments?limit=${bad}`,
        `/v1/rescues?limit=${bad}`,
        `/v1/rescues/rsc_x?seen=${bad}`,
      ]) {
        const [status, body] = await get(path);
        expect([path, status, body]).toEqual([path, 400, expect.stringMatching(/(limit|seen): /)]);
      }
    }
    expect((await get("/v1/experiments?limit=5"))[0]).toBe(200);
    expect((await get("/v1/rescues?limit=16"))[0]).toBe(200);
  });
});
