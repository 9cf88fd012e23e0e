import { describe, expect, it } from "vitest";
import { MemoryPoolStore, MemoryRolloutStore } from "@harness-s/adapters";
import { createPool } from "@harness-s/core";
import { runRequestedRollout, singlePolicyEndpoint, type RescueJobStore } from "@harness-s/core/rescue";
import { makeRollout, makeSpec, makeTask } from "../factories.ts";

describe("a requested rollout at the dispatch worker", () => {
  it("reads its rescue job only when it is part of one: an experiment's rollout runs without that read", async () => {
    // Prepare: every rescue job reads as cancelled, and each read is counted
    const pools = new MemoryPoolStore();
    await pools.put(createPool("p", makeSpec({ id: "h0" }), [makeSpec({ id: "sib-a", provenance: { direction: "contract" } })]));
    let reads = 0;
    const jobs = {
      get: async () => {
        reads++;
        return { cancelledAt: 1 };
      },
    } as unknown as RescueJobStore;
    const task = makeTask();
    const deps = {
      pools,
      tasks: { get: async () => task },
      rollouts: new MemoryRolloutStore(),
      policies: singlePolicyEndpoint(async (_t, h, seed) => makeRollout({ harnessId: h.id, seed })),
      jobs,
    };
    const body = { jobId: "exp/1/grpo", index: 0, poolId: "p", harnessId: "h0", taskId: task.id, seed: 1, policyId: "default" };
    // Act
    const experiment = await runRequestedRollout(body, deps);
    const rescue = await runRequestedRollout({ ...body, jobId: "rescue-1", rescueJob: true }, deps);
    // Assess
    expect(experiment).toBe("stored");
    expect(rescue).toBe("cancelled");
    expect(reads).toBe(1);
  });
});
