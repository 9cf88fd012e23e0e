import { describe, expect, it } from "vitest";
import { ConflictError } from "@harness-s/core";
import type { RescueJobStore } from "@harness-s/core/rescue";
import { expectListsByKey } from "./list-by-key.contract.ts";

/** What every RescueJobStore must do; `fresh` returns an empty store. */
export function rescueJobStoreContract(name: string, fresh: () => Promise<{ jobs: RescueJobStore }>): void {
  describe(`RescueJobStore contract: ${name}`, () => {
    it("rescue jobs: created once, read back", async () => {
      const s = await fresh();
      const job = {
        id: "rsc_1",
        poolId: "p",
        taskId: "t",
        decisionId: "d",
        chosen: ["a", "b"],
        rolloutsPerHarness: 2,
        expected: 4,
        createdAt: 1,
      };
      await s.jobs.create(job);
      expect(await s.jobs.get("rsc_1")).toEqual(job);
      await expect(s.jobs.create(job)).rejects.toBeInstanceOf(ConflictError);
      expect(await s.jobs.get("rsc_2")).toBeUndefined();
    });

    it("rescue jobs: a cancel keeps its first time, and cancelling an unknown job changes nothing", async () => {
      const s = await fresh();
      await s.jobs.create({
        id: "rsc_c",
        poolId: "p",
        taskId: "t",
        decisionId: "d",
        chosen: ["a"],
        rolloutsPerHarness: 1,
        expected: 1,
        createdAt: 1,
      });
      await s.jobs.cancel("rsc_c", 50);
      await s.jobs.cancel("rsc_c", 90);
      expect((await s.jobs.get("rsc_c"))!.cancelledAt).toBe(50);
      await s.jobs.cancel("rsc_none", 50);
      expect(await s.jobs.get("rsc_none")).toBeUndefined();
    });

    it("rescue jobs: spend adds up across concurrent slots, and an unknown job's is dropped", async () => {
      const s = await fresh();
      await s.jobs.create({
        id: "rsc_s",
        poolId: "p",
        taskId: "t",
        decisionId: "d",
        chosen: ["a"],
        rolloutsPerHarness: 8,
        expected: 8,
        createdAt: 1,
      });
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          s.jobs.addSpend("rsc_s", { policyTokens: 10 + i, policyMs: 1.5, environmentMs: 2.5 }),
        ),
      );
      expect(await s.jobs.get("rsc_s")).toMatchObject({
        spentPolicyTokens: 108,
        spentPolicyMs: 12,
        spentEnvironmentMs: 20,
      });
      await s.jobs.addSpend("rsc_none", { policyTokens: 1, policyMs: 1, environmentMs: 1 });
      expect(await s.jobs.get("rsc_none")).toBeUndefined();
    });

    it("rescue jobs: each key lists the rescues it started only, newest first, a page at a time; a job of no key is in no list", async () => {
      const s = await fresh();
      const job = (id: string, createdAt: number, keyId?: string) => ({
        id,
        poolId: "p",
        taskId: "t",
        decisionId: "d",
        chosen: ["a"],
        rolloutsPerHarness: 1,
        expected: 1,
        createdAt,
        ...(keyId ? { keyId } : {}),
      });
      const mine = [
        { id: "rsc_a", createdAt: 1_700_000_000_100 },
        { id: "rsc_b", createdAt: 1_700_000_000_300 },
        { id: "rsc_c", createdAt: 1_700_000_000_300 },
        { id: "rsc_d", createdAt: 7 },
      ];
      const theirs = [{ id: "rsc_x", createdAt: 1_700_000_000_200 }];
      for (const r of mine) await s.jobs.create(job(r.id, r.createdAt, "k1"));
      for (const r of theirs) await s.jobs.create(job(r.id, r.createdAt, "k2"));
      await s.jobs.create(job("rsc_nokey", 1_700_000_000_500));
      await s.jobs.cancel("rsc_c", 9);
      await expectListsByKey((k, p) => s.jobs.listByKey(k, p), mine, theirs);
      expect((await s.jobs.listByKey("k1", { limit: 1 })).items).toEqual([
        { ...job("rsc_c", 1_700_000_000_300, "k1"), cancelledAt: 9 },
      ]);
    });
  });
}
