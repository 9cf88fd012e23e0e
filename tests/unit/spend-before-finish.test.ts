import { describe, expect, it } from "vitest";
import { MemoryRescueJobStore, MemoryRolloutStore, MemoryUsageMeter } from "@harness-s/adapters/stores";
import {
  rolloutRunners,
  runRequestedRollout,
  type CallerPolicies,
  type RolloutRequestedBody,
} from "@harness-s/core/dispatch";
import type { RescueJob } from "@harness-s/core/rescue";
import { callerSlotSource, idleCallerPolicies, makeRollout, makeTask } from "../factories.ts";

// A status that shows a caller slot finished (its rollout stored, or its failure recorded) shows
// what that slot spent: the spend is held against its rescue first. CI once saw a rescue "done"
// with 0 policy tokens spent, its rollouts stored while their spend was still being written.
const body: RolloutRequestedBody = {
  jobId: "rsc_1",
  index: 0,
  poolId: "p",
  harnessId: "h0",
  taskId: "t1",
  seed: 3,
  source: { kind: "caller", ...callerSlotSource },
  rescueJob: true,
};

/**
 * Caller slots whose rescue's spend is written slowly; `seen` is the rescue's record as each finishing write found it.
 */
async function setup(run: () => Promise<ReturnType<typeof makeRollout>>) {
  const slow = new MemoryRescueJobStore();
  await slow.create({
    id: "rsc_1",
    poolId: "p",
    taskId: "t1",
    decisionId: "d",
    chosen: ["h0"],
    rolloutsPerHarness: 1,
    expected: 1,
    createdAt: 0,
    keyId: "k-a",
    caller: callerSlotSource,
  });
  const seen: (RescueJob | undefined)[] = [];
  const jobs = Object.assign(Object.create(slow) as MemoryRescueJobStore, {
    addSpend: async (...a: Parameters<MemoryRescueJobStore["addSpend"]>) => {
      await new Promise((r) => setTimeout(r, 30));
      return slow.addSpend(...a);
    },
    recordFailure: async (...a: Parameters<MemoryRescueJobStore["recordFailure"]>) => {
      seen.push(await slow.get("rsc_1"));
      return slow.recordFailure(...a);
    },
  });
  const store = new MemoryRolloutStore();
  const rollouts = Object.assign(Object.create(store) as MemoryRolloutStore, {
    put: async (...a: Parameters<MemoryRolloutStore["put"]>) => {
      seen.push(await slow.get("rsc_1"));
      return store.put(...a);
    },
  });
  const callers: CallerPolicies = {
    ...idleCallerPolicies(0),
    runner: async (_source, onSpend) => async () => {
      onSpend?.({ policyTokens: 42, policyMs: 5, environmentMs: 2 });
      return run();
    },
  };
  const deps = {
    pools: {
      get: async () => ({ id: "p", base: { id: "h0" }, siblings: [] }) as never,
      put: async () => undefined,
      list: async () => [],
    },
    tasks: { get: async () => makeTask({ id: "t1" }) },
    rollouts,
    runners: rolloutRunners({ caller: callers }),
    jobs,
    meter: new MemoryUsageMeter(),
  };
  return { deps, seen };
}

describe("a caller slot's spend", () => {
  it("is held against its rescue before its rollout is stored", async () => {
    const { deps, seen } = await setup(async () => makeRollout({ harnessId: "h0" }));
    expect(await runRequestedRollout(body, deps)).toBe("stored");
    expect(seen.map((j) => j?.spentPolicyTokens)).toEqual([42]);
    expect((await deps.meter.get("k-a")).policyTokens).toBe(42);
  });

  it("is held against its rescue before its failure is recorded", async () => {
    const { deps, seen } = await setup(async () => {
      throw new Error("the environment refused the episode");
    });
    expect(await runRequestedRollout(body, deps)).toBe("failed");
    expect(seen.map((j) => j?.spentPolicyTokens)).toEqual([42]);
    expect((await deps.jobs.get("rsc_1"))?.failures).toMatchObject([{ index: 0, code: "ROLLOUT_FAILED" }]);
  });
});
