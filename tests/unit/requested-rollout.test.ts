import { describe, expect, it } from "vitest";
import { MemoryPoolStore, MemoryRolloutStore } from "@harness-s/adapters/stores";
import { createPool } from "@harness-s/core";
import { rolloutRunners, runRequestedRollout, singlePolicyEndpoint } from "@harness-s/core/dispatch";
import type { RescueJobStore } from "@harness-s/core/rescue";
import { makeRollout, makeSpec, makeTask } from "../factories.ts";

describe("a requested rollout at the dispatch worker", () => {
  it("reads its rescue job only when it is part of one: an experiment's rollout runs without that read", async () => {
    // Prepare: every rescue job reads as cancelled, and each read is counted
    const pools = new MemoryPoolStore();
    await pools.put(
      createPool("p", makeSpec({ id: "h0" }), [makeSpec({ id: "sib-a", provenance: { direction: "contract" } })]),
    );
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
      runners: rolloutRunners({
        service: singlePolicyEndpoint(async (_t, h, seed) => makeRollout({ harnessId: h.id, seed })),
      }),
      jobs,
    };
    const body = {
      jobId: "exp/1/grpo",
      index: 0,
      poolId: "p",
      harnessId: "h0",
      taskId: task.id,
      seed: 1,
      source: { kind: "service" as const, policyId: "default" },
    };
    // Act
    const experiment = await runRequestedRollout(body, deps);
    const rescue = await runRequestedRollout({ ...body, jobId: "rescue-1", rescueJob: true }, deps);
    // Assess
    expect(experiment).toBe("stored");
    expect(rescue).toBe("cancelled");
    expect(reads).toBe(1);
  });

  it("resolves each source by its kind's runner, and fails a kind the worker has no runner for with NOT_CONFIGURED", async () => {
    // Prepare: a worker with a runner for the service's policies only, which records what it was asked
    const pools = new MemoryPoolStore();
    await pools.put(
      createPool("p", makeSpec({ id: "h0" }), [makeSpec({ id: "sib-a", provenance: { direction: "contract" } })]),
    );
    const asked: unknown[] = [];
    const service = {
      runner: async (source: unknown) => {
        asked.push(source);
        return async (_t: unknown, h: { id: string }, seed: number) => makeRollout({ harnessId: h.id, seed });
      },
    };
    const task = makeTask();
    const deps = {
      pools,
      tasks: { get: async () => task },
      rollouts: new MemoryRolloutStore(),
      runners: rolloutRunners({ service }),
    };
    const body = { jobId: "exp/1/grpo", index: 0, poolId: "p", harnessId: "h0", taskId: task.id, seed: 1 };
    const caller = {
      kind: "caller" as const,
      keyId: "k",
      endpoint: "mine",
      weightVersion: 2,
      environment: { kind: "builtin" as const, id: "embedded" as const },
      task: {
        id: task.id,
        family: "app",
        tags: [],
        instruction: "",
        tools: [{ name: "submit", description: "", parameters: {}, submit: true }],
        reset: {},
      },
      system: "",
      maxTokens: 8,
    };
    // Act
    const stored = await runRequestedRollout(
      { ...body, source: { kind: "service", policyId: "exp/1/grpo", version: 3 } },
      deps,
    );
    const refused = runRequestedRollout({ ...body, index: 1, source: caller }, deps);
    // Assess
    expect(stored).toBe("stored");
    expect(asked).toEqual([{ kind: "service", policyId: "exp/1/grpo", version: 3 }]);
    await expect(refused).rejects.toMatchObject({
      code: "NOT_CONFIGURED",
      message: "this dispatch worker runs no caller rescues",
    });
  });
});
