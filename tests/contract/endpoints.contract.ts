import { describe, expect, it } from "vitest";
import { ENDPOINTS_PER_KEY, type PolicyEndpointRecord, type PolicyEndpointStore } from "@harness-s/core/callers";

const record = (keyId: string, id: string, url = `http://policy.example.com/${id}`): PolicyEndpointRecord => ({
  keyId,
  id,
  kind: "protocol-v2",
  url,
  policy: "p1",
  createdAt: 1,
  probe: { weightVersion: 0, checkedAt: 1 },
});
const tally = (outcomes: string[]) =>
  Object.fromEntries([...new Set(outcomes)].sort().map((o) => [o, outcomes.filter((x) => x === o).length]));

/**
 * Issue 52, item 9: a store holds the per-key limit itself, under concurrency (the register path
 * listed, then put: 150 concurrent registrations stored 102). `fresh()` gives an empty store.
 */
export function endpointStoreContract(name: string, fresh: () => Promise<PolicyEndpointStore>): void {
  describe(`PolicyEndpointStore contract: ${name}`, () => {
    it("150 concurrent puts of new ids store exactly the limit (100), the rest refused as full; another key is apart", async () => {
      const s = await fresh();
      const outcomes = await Promise.all(
        Array.from({ length: 150 }, (_, i) => s.put(record("k1", `e${i}`), ENDPOINTS_PER_KEY)),
      );
      expect(tally(outcomes)).toEqual({ created: 100, full: 50 });
      expect((await s.list("k1")).length).toBe(100);
      expect(await s.put(record("k2", "e0"), ENDPOINTS_PER_KEY)).toBe("created");
    });

    it("a full key's replaced ids count once (concurrent re-puts too), and each delete frees exactly one place", async () => {
      const s = await fresh();
      for (let i = 0; i < 3; i++) expect(await s.put(record("k1", `e${i}`), 3)).toBe("created");
      // Re-putting ids it holds, concurrently and repeatedly, while new ids race for no place.
      const again = await Promise.all([
        ...Array.from({ length: 30 }, (_, i) => s.put(record("k1", `e${i % 3}`, `http://policy.example.com/v${i}`), 3)),
        ...Array.from({ length: 10 }, (_, i) => s.put(record("k1", `new${i}`), 3)),
      ]);
      expect(tally(again)).toEqual({ full: 10, replaced: 30 });
      expect((await s.list("k1")).map((r) => r.id).sort()).toEqual(["e0", "e1", "e2"]);
      // Two concurrent deletes of one id free one place; two concurrent new ids then race for it.
      expect((await Promise.all([s.delete("k1", "e1"), s.delete("k1", "e1")])).sort()).toEqual([false, true]);
      expect(tally(await Promise.all([s.put(record("k1", "x"), 3), s.put(record("k1", "y"), 3)]))).toEqual({
        created: 1,
        full: 1,
      });
      expect((await s.list("k1")).length).toBe(3);
      // Deletes and puts interleaved: the count never passes the limit and stays the records' count.
      await Promise.all([
        s.delete("k1", "e0"),
        s.delete("k1", "e2"),
        ...Array.from({ length: 6 }, (_, i) => s.put(record("k1", `z${i}`), 3)),
      ]);
      const held = (await s.list("k1")).length;
      expect(held).toBeLessThanOrEqual(3);
      const fill = [];
      for (let i = 0; i < 4; i++) fill.push(await s.put(record("k1", `fill${i}`), 3));
      expect(tally(fill)).toEqual(held === 3 ? { full: 4 } : { created: 3 - held, full: 1 + held });
    });
  });
}

/**
 * What every PolicyEndpointStore must do with its records: each key's apart, replaced on put, deleted once. `fresh`
 * returns an empty store.
 */
export function endpointRecordsContract(name: string, fresh: () => Promise<{ endpoints: PolicyEndpointStore }>): void {
  describe(`PolicyEndpointStore records contract: ${name}`, () => {
    it("policy endpoints: each key's apart; replaced on put, deleted once", async () => {
      const s = await fresh();
      const rec = (keyId: string, id: string, url: string): PolicyEndpointRecord => ({
        keyId,
        id,
        kind: "protocol-v2",
        url,
        policy: "p1",
        secretHeader: { name: "x-api-key", value: "s3cret" },
        createdAt: 1,
        probe: { weightVersion: 2, checkedAt: 1 },
      });
      await s.endpoints.put(rec("k1", "e1", "http://a"), 100);
      await s.endpoints.put(rec("k1", "e1", "http://b"), 100);
      await s.endpoints.put(rec("k2", "e1", "http://c"), 100);
      expect(await s.endpoints.get("k1", "e1")).toEqual(rec("k1", "e1", "http://b"));
      expect((await s.endpoints.list("k1")).map((e) => e.url)).toEqual(["http://b"]);
      expect((await s.endpoints.list("k2")).map((e) => e.url)).toEqual(["http://c"]);
      expect(await s.endpoints.delete("k1", "e1")).toBe(true);
      expect(await s.endpoints.delete("k1", "e1")).toBe(false);
      expect(await s.endpoints.get("k2", "e1")).toBeDefined();
      expect(await s.endpoints.get("k1", "e1")).toBeUndefined();
    });
  });
}
