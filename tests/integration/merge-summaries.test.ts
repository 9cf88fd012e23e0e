import { describe, expect, it } from "vitest";
import { ExperimentConfig, TrainConfig, mergeSummaries, runExperimentToEnd } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

const setup = embeddedSetup(defaultEmbeddedSettings);
const train = TrainConfig.parse({ steps: 2, batchSize: 4, curveEvery: 1, curveTasks: 4, reanchorEvery: 1, reanchorBudget: 6 });
const configFor = (seeds: number[], over: Partial<ExperimentConfig> = {}) =>
  ExperimentConfig.parse({ seeds, arms: ["grpo", "grpo-budget", "harness-s"], train, evalSamples: 3, ...over });

describe("merging runs on disjoint seeds", () => {
  it("gives the summary of one run on all the seeds", async () => {
    // Prepare
    const [three, four, both] = await Promise.all([
      runExperimentToEnd(configFor([3]), setup),
      runExperimentToEnd(configFor([4]), setup),
      runExperimentToEnd(configFor([3, 4]), setup),
    ]);
    // Act
    const merged = mergeSummaries([three, four]);
    // Assess
    expect(merged).toEqual(both);
  }, 120_000);

  it("refuses runs of different configurations, or that share a seed, saying which", async () => {
    const a = await runExperimentToEnd(configFor([3]), setup);
    const b = await runExperimentToEnd(configFor([4], { evalSamples: 4 }), setup);
    expect(() => mergeSummaries([a, b])).toThrow(/run 2 differs from run 1 in config.evalSamples/);
    const validation = { ...b, config: { ...a.config, protocol: "validation" } };
    expect(() => mergeSummaries([a, validation])).toThrow(/run 2 differs from run 1 in config.protocol/);
    expect(() => mergeSummaries([a, a])).toThrow(/seed 3 is in more than one run/);
    expect(() => mergeSummaries([])).toThrow(/nothing to merge/);
  }, 120_000);
});
