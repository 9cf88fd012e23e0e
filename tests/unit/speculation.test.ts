import { describe, expect, it } from "vitest";
import { ArmConfig, TrainConfig, speculativeRunner, trainArm } from "@harness-s/core/training";
import { rankByScore, type Voter } from "@harness-s/core/voting";
import type { HarnessSpec, RolloutRunner, Task } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { makeRollout, makeSpec, makeTask, makeTrainDeps } from "../factories.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const instance = await setup.instance(1);
const config = TrainConfig.parse({
  steps: 4,
  batchSize: 12,
  curveEvery: 0,
  reanchorEvery: 2,
  reanchorBudget: 20,
  auditEvery: 2,
});

/** Counts the rollouts a runner starts and the most of them in flight at once outside the H0 groups. */
function watched(run: RolloutRunner, h0Id: string) {
  const seen = { started: 0, most: 0 };
  let inFlight = 0;
  const runner: RolloutRunner = async (task: Task, harness: HarnessSpec, seed: number) => {
    seen.started++;
    const rescue = harness.id !== h0Id ? 1 : 0;
    inFlight += rescue;
    seen.most = Math.max(seen.most, inFlight);
    await new Promise((r) => setTimeout(r, 0));
    try {
      return await run(task, harness, seed);
    } finally {
      inFlight -= rescue;
    }
  };
  return { runner, seen };
}

describe("speculativeRunner", () => {
  it("hands a started rollout only to a request for the same task, harness and seed, once, and runs the rest", async () => {
    // Prepare
    const runs: string[] = [];
    const run: RolloutRunner = async (t, h, seed) => {
      runs.push(`${t.id}/${h.id}/${seed}`);
      return makeRollout({ taskId: t.id, harnessId: h.id, seed });
    };
    const [t1, t2] = [makeTask({ id: "t1" }), makeTask({ id: "t2" })];
    const [a, b] = [makeSpec({ id: "a" }), makeSpec({ id: "b" })];
    const ahead = speculativeRunner(run);
    // Act
    for (const [t, h, seed] of [
      [t1, a, 1],
      [t1, b, 1],
      [t1, a, 2],
      [t2, a, 1],
    ] as const)
      void ahead.prefetch(t, h, seed);
    const got = [
      await ahead.run(t1, a, 2),
      await ahead.run(t2, b, 1),
      await ahead.run(t1, a, 2),
      await ahead.run(t2, a, 1),
    ];
    // Assess
    expect(got.map((r) => `${r.taskId}/${r.harnessId}/${r.seed}`)).toEqual(["t1/a/2", "t2/b/1", "t1/a/2", "t2/a/1"]);
    expect(runs).toEqual(["t1/a/1", "t1/b/1", "t1/a/2", "t2/a/1", "t2/b/1", "t1/a/2"]);
    expect(await ahead.settle()).toBe(2);
  });
});

describe("speculative rescues", () => {
  it("train every arm exactly as one group at a time does, starting no rollout twice when the guesses hold", async () => {
    const arms = [
      { name: "harness-s", rescue: "router" },
      { name: "harness-s-random", rescue: "random", reanchor: false },
      { name: "grpo-budget", rescue: "resample-h0", extraBudget: 40, reanchor: false },
    ] as const;
    for (const arm of arms) {
      // Prepare: two fresh policies of the same seed, one trained each way
      const plain = makeTrainDeps(setup, instance, setup.createPolicy(3), 3);
      const ahead = makeTrainDeps(setup, instance, setup.createPolicy(3), 3);
      const watchPlain = watched(plain.runRollout, instance.evolution.pool.base.id);
      const watch = watched(ahead.runRollout, instance.evolution.pool.base.id);
      // Act
      const want = await trainArm(ArmConfig.parse(arm), config, { ...plain, runRollout: watchPlain.runner });
      const got = await trainArm(ArmConfig.parse(arm), config, { ...ahead, runRollout: watch.runner, speculate: true });
      // Assess: the same result, record for record; the same rollouts started; rescues of several groups at once
      expect(JSON.stringify(got)).toBe(JSON.stringify(want));
      expect(got.rescue.allFailGroups).toBeGreaterThan(1);
      if (arm.rescue !== "router") expect(watch.seen.started).toBe(watchPlain.seen.started);
      if (arm.rescue === "random") expect(watch.seen.most).toBeGreaterThan(config.groupSize);
    }
  });

  it("give the result of one group at a time when routing reads the evidence of the rescues just before it (guesses miss)", async () => {
    // Prepare: a voter that ranks the least-tried siblings first, so each rescue's evidence moves the next choice
    const leastTried: Voter = {
      id: "least-tried",
      vote: async (req) =>
        rankByScore(
          "least-tried",
          Object.fromEntries(req.candidates.map((c) => [c.id, -(req.profiles[c.id]?.turns.attempts ?? 0)])),
        ),
    };
    const arm = ArmConfig.parse({ name: "harness-s", rescue: "router", reanchor: false });
    const noExploration = { ...config, exploration: 0, auditEvery: 0 };
    const plain = { ...makeTrainDeps(setup, instance, setup.createPolicy(4), 4), voters: [leastTried] };
    const ahead = { ...makeTrainDeps(setup, instance, setup.createPolicy(4), 4), voters: [leastTried] };
    const watchPlain = watched(plain.runRollout, instance.evolution.pool.base.id);
    const watch = watched(ahead.runRollout, instance.evolution.pool.base.id);
    // Act
    const want = await trainArm(arm, noExploration, { ...plain, runRollout: watchPlain.runner });
    const got = await trainArm(arm, noExploration, { ...ahead, runRollout: watch.runner, speculate: true });
    // Assess: guesses missed (more rollouts started than used), and the result is still the sequential one
    expect(watch.seen.started).toBeGreaterThan(watchPlain.seen.started);
    expect(JSON.stringify(got)).toBe(JSON.stringify(want));
  });
});
