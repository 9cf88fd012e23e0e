import { describe, expect, it } from "vitest";
import { ExperimentConfig, runExperimentToEnd } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

// Whole embedded experiments (every arm trained and evaluated): integration, not unit.
const setup = embeddedSetup(defaultEmbeddedSettings);
const small = TrainConfig.parse({
  steps: 4,
  batchSize: 8,
  curveEvery: 2,
  curveTasks: 6,
  reanchorEvery: 2,
  reanchorBudget: 20,
});

describe("runExperiment", () => {
  const config = ExperimentConfig.parse({
    seeds: [3],
    train: small,
    evalSamples: 3,
    arms: ["grpo", "grpo-budget", "harness-s"],
  });

  it("gives grpo-budget exactly the extra rollouts harness-s spent", async () => {
    const s = await runExperimentToEnd(config, setup);
    const hs = s.arms.find((a) => a.name === "harness-s")!.perSeed[0]!;
    const gb = s.arms.find((a) => a.name === "grpo-budget")!.perSeed[0]!;
    expect(gb.rolloutBreakdown.resample).toBeLessThanOrEqual(hs.rolloutBreakdown.rescue + hs.rolloutBreakdown.reanchor);
    expect(s.arms.find((a) => a.name === "harness-s")!.rank1).toBeDefined();
    expect(s.arms.find((a) => a.name === "grpo")!.rank1).toBeUndefined();
  });

  it("runs each seed on its own suite instance and pool unless told to share one", async () => {
    const two = ExperimentConfig.parse({ ...config, seeds: [1, 2], arms: ["grpo"] });
    const own = await runExperimentToEnd(two, setup);
    expect(own.poolVersions["1"]).not.toBe(own.poolVersions["2"]);
    const shared = await runExperimentToEnd(two, embeddedSetup({ ...defaultEmbeddedSettings, fixedSuite: true }));
    expect(shared.poolVersions["1"]).toBe(shared.poolVersions["2"]);
  });

  it("is deterministic: the same seed gives an identical summary", async () => {
    const a = await runExperimentToEnd(config, setup);
    const b = await runExperimentToEnd(config, setup);
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });
});
