import { describe, expect, it } from "vitest";
import { ConflictError } from "@harness-s/core";
import type { ExperimentRecord, ExperimentStore } from "@harness-s/core/experiment";
import { expectListsByKey } from "./list-by-key.contract.ts";

function experiment(id: string, over: Partial<ExperimentRecord> = {}): ExperimentRecord {
  return {
    id,
    keyId: "k1",
    request: {
      env: "embedded",
      arms: ["grpo"],
      seeds: [1],
      train: {},
      evalSamples: 3,
      protocol: "test",
      budget: { rollouts: 10 },
    },
    status: "queued",
    createdAt: 1,
    updatedAt: 1,
    attempts: 0,
    progress: { done: 0, total: 20, label: "queued" },
    usage: { rollouts: 0, computeMs: 0 },
    results: [],
    baselines: [],
    units: [],
    ...over,
  };
}

/** What every ExperimentStore must do; `fresh` returns an empty store. */
export function experimentStoreContract(name: string, fresh: () => Promise<{ experiments: ExperimentStore }>): void {
  describe(`ExperimentStore contract: ${name}`, () => {
    it("experiments: created once; claimed by one coordinator at a time; re-claimable after the lease expires", async () => {
      const s = await fresh();
      await s.experiments.create(experiment("e1"));
      await expect(s.experiments.create(experiment("e1"))).rejects.toBeInstanceOf(ConflictError);
      const claims = await Promise.all([s.experiments.claim("e1", 100, 200), s.experiments.claim("e1", 100, 200)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(claims.find(Boolean)!.status).toBe("running");
      expect(await s.experiments.claim("e1", 150, 250)).toBeUndefined();
      expect((await s.experiments.claim("e1", 201, 300))!.leaseUntil).toBe(300);
      await s.experiments.save(
        experiment("e1", { status: "done", attempts: 2, usage: { rollouts: 10, computeMs: 5 } }),
      );
      expect(await s.experiments.claim("e1", 10_000, 20_000)).toBeUndefined();
      expect(await s.experiments.get("e1")).toMatchObject({
        status: "done",
        attempts: 2,
        usage: { rollouts: 10, computeMs: 5 },
      });
      expect(await s.experiments.claim("missing", 1, 2)).toBeUndefined();
      expect(await s.experiments.get("missing")).toBeUndefined();
    });

    it("experiments: each key lists its own runs only, newest first, a page at a time", async () => {
      const s = await fresh();
      const mine = [
        { id: "e-a", createdAt: 1_700_000_000_100 },
        { id: "e-b", createdAt: 1_700_000_000_300 },
        { id: "e-c", createdAt: 1_700_000_000_300 },
        { id: "e-d", createdAt: 1_700_000_000_200 },
        { id: "e-e", createdAt: 5 },
      ];
      const theirs = [
        { id: "e-x", createdAt: 1_700_000_000_250 },
        { id: "e-y", createdAt: 1_700_000_000_400 },
      ];
      for (const r of mine) await s.experiments.create(experiment(r.id, { createdAt: r.createdAt }));
      for (const r of theirs) await s.experiments.create(experiment(r.id, { keyId: "k2", createdAt: r.createdAt }));
      await s.experiments.save(
        experiment("e-b", {
          createdAt: 1_700_000_000_300,
          status: "done",
          progress: { done: 20, total: 20, label: "done" },
        }),
      );
      await expectListsByKey((k, p) => s.experiments.listByKey(k, p), mine, theirs);
      const first = await s.experiments.listByKey("k1", { limit: 2 });
      expect(first.items.map((r) => [r.id, r.status, r.keyId])).toEqual([
        ["e-c", "queued", "k1"],
        ["e-b", "done", "k1"],
      ]);
    });
  });
}
