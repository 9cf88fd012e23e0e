import { describe, expect, it } from "vitest";
import {
  ArmConfig,
  ExperimentConfig,
  TrainConfig,
  runExperiment,
  trainArm,
} from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "../../packages/cli/src/embedded.ts";
import { makeTrainDeps } from "../factories.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const instance = await setup.instance(1);
const small = TrainConfig.parse({ steps: 4, batchSize: 8, curveEvery: 2, curveTasks: 6, reanchorEvery: 2, reanchorBudget: 20 });

const deps = (seed: number) => makeTrainDeps(setup, instance, setup.createPolicy(seed), seed);

describe("trainArm", () => {
  it("grpo spends exactly steps × batch × group rollouts and one update per step", async () => {
    const d = deps(1);
    const r = await trainArm(ArmConfig.parse({ name: "grpo", rescue: "none", reanchor: false }), small, d);
    expect(r.rollouts).toEqual({ train: 4 * 8 * 4, rescue: 0, resample: 0, reanchor: 0, total: 128 });
    expect(d.policy.version()).toBeLessThanOrEqual(4);
    expect(r.curve.map((c) => c.step)).toEqual([0, 2, 4]);
  });

  it("harness-s rescues only all-fail groups, counts every rollout, and re-anchors within budget", async () => {
    const r = await trainArm(ArmConfig.parse({ name: "harness-s", rescue: "router" }), small, deps(1));
    expect(r.rescue.triggered).toBe(r.rescue.allFailGroups);
    expect(r.rescue.replaced + r.rescue.dropped).toBe(r.rescue.triggered);
    expect(r.rollouts.rescue).toBe(r.rescue.triggered * small.groupSize);
    expect(r.rollouts.reanchor).toBeLessThanOrEqual(2 * small.reanchorBudget);
    expect(r.rollouts.total).toBe(r.rollouts.train + r.rollouts.rescue + r.rollouts.reanchor);
    expect(r.decisions.length).toBe(r.rescue.triggered);
    expect(r.utilities.map((u) => u.step)).toEqual([2, 4]);
  });

  it("grpo-budget resamples all-fail groups under H0 and never exceeds its extra budget", async () => {
    for (const extra of [0, 4, 10, 1000]) {
      const r = await trainArm(ArmConfig.parse({ name: "grpo-budget", rescue: "resample-h0", extraBudget: extra, reanchor: false }), small, deps(2));
      expect(r.rollouts.resample).toBeLessThanOrEqual(extra);
      expect(r.rollouts.resample % small.groupSize).toBe(0);
    }
  });
});

describe("runExperiment", () => {
  const config = ExperimentConfig.parse({ seeds: [3], train: small, evalSamples: 3, arms: ["grpo", "grpo-budget", "harness-s"] });

  it("gives grpo-budget exactly the extra rollouts harness-s spent", async () => {
    const s = await runExperiment(config, setup);
    const hs = s.arms.find((a) => a.name === "harness-s")!.perSeed[0]!;
    const gb = s.arms.find((a) => a.name === "grpo-budget")!.perSeed[0]!;
    expect(gb.rolloutBreakdown.resample).toBeLessThanOrEqual(hs.rolloutBreakdown.rescue + hs.rolloutBreakdown.reanchor);
    expect(s.arms.find((a) => a.name === "harness-s")!.rank1).toBeDefined();
    expect(s.arms.find((a) => a.name === "grpo")!.rank1).toBeUndefined();
  });

  it("runs each seed on its own suite instance and pool unless told to share one", async () => {
    const two = ExperimentConfig.parse({ ...config, seeds: [1, 2], arms: ["grpo"] });
    const own = await runExperiment(two, setup);
    expect(own.poolVersions["1"]).not.toBe(own.poolVersions["2"]);
    const shared = await runExperiment(two, embeddedSetup({ ...defaultEmbeddedSettings, fixedSuite: true }));
    expect(shared.poolVersions["1"]).toBe(shared.poolVersions["2"]);
  });

  it("is deterministic: the same seed gives an identical summary", async () => {
    const a = await runExperiment(config, setup);
    const b = await runExperiment(config, setup);
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });
});
