import { describe, expect, it } from "vitest";
import { ConflictError, createPool, type PoolStore } from "@harness-s/core";
import { makeSpec } from "../factories.ts";

/** What every PoolStore must do; `fresh` returns an empty store. */
export function poolStoreContract(name: string, fresh: () => Promise<{ pools: PoolStore }>): void {
  describe(`PoolStore contract: ${name}`, () => {
    it("pools: round-trips, is idempotent for the same content, immutable for different content", async () => {
      const s = await fresh();
      const pool = createPool("p1", makeSpec(), [makeSpec({ id: "sib-a", provenance: { direction: "recovery" } })]);
      await s.pools.put(pool);
      await s.pools.put(pool);
      expect(await s.pools.get("p1")).toEqual(pool);
      const other = createPool("p1", makeSpec(), [makeSpec({ id: "sib-b", provenance: { direction: "recovery" } })]);
      await expect(s.pools.put(other)).rejects.toBeInstanceOf(ConflictError);
      expect(await s.pools.get("missing")).toBeUndefined();
      await s.pools.put(createPool("p0", makeSpec(), [makeSpec({ id: "sib-c", provenance: { direction: "recon" } })]));
      expect((await s.pools.list()).map((p) => p.id)).toEqual(["p0", "p1"]);
    });

    it("pools: an evolved pool's owner round-trips and is listed; a pool without one lists none", async () => {
      const s = await fresh();
      const owned = {
        ...createPool("pev_1", makeSpec(), [makeSpec({ id: "sib-a", provenance: { direction: "recovery" } })]),
        owner: "k-owner",
      };
      await s.pools.put(owned);
      await s.pools.put(
        createPool("shared", makeSpec(), [makeSpec({ id: "sib-b", provenance: { direction: "recon" } })]),
      );
      expect(await s.pools.get("pev_1")).toEqual(owned);
      expect((await s.pools.list()).map((p) => [p.id, p.owner])).toEqual([
        ["pev_1", "k-owner"],
        ["shared", undefined],
      ]);
    });

    it("pools: the same pool put again under another owner (or none) is a CONFLICT: a key can neither take a pool nor hide a shared one", async () => {
      const s = await fresh();
      const shared = createPool("shared", makeSpec(), [makeSpec({ id: "sib-b", provenance: { direction: "recon" } })]);
      const owned = {
        ...createPool("mine", makeSpec(), [makeSpec({ id: "sib-a", provenance: { direction: "recovery" } })]),
        owner: "k-owner",
      };
      await s.pools.put(shared);
      await s.pools.put(owned);
      await s.pools.put(owned);
      await expect(s.pools.put({ ...shared, owner: "k-thief" })).rejects.toBeInstanceOf(ConflictError);
      await expect(s.pools.put({ ...owned, owner: "k-thief" })).rejects.toBeInstanceOf(ConflictError);
      const { owner: _o, ...unowned } = owned;
      await expect(s.pools.put(unowned)).rejects.toBeInstanceOf(ConflictError);
      expect((await s.pools.list()).map((p) => [p.id, p.owner])).toEqual([
        ["mine", "k-owner"],
        ["shared", undefined],
      ]);
    });
  });
}
