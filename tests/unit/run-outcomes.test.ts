import { describe, expect, it } from "vitest";
import { BudgetExceededError } from "@harness-s/core";
import { ExperimentConfig, inProcessRunners, runExperiment } from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

const setup = embeddedSetup(defaultEmbeddedSettings);
const config = ExperimentConfig.parse({
  seeds: [5],
  arms: ["grpo", "harness-s"],
  train: { steps: 3, batchSize: 4, curveEvery: 0 },
  evalSamples: 3,
  evalTasks: 2,
});

describe("how a run stops: returned outcomes, not exceptions", () => {
  it("a cancel seen after a training step ends the run with { kind: stopped, reason: cancelled } and what is left", async () => {
    // Prepare: cancelled once the first unit has taken two steps.
    let steps = 0;
    // Act
    const outcome = await runExperiment(config, {
      ...setup,
      onProgress: () => steps++,
      shouldStop: () => (steps >= 2 ? { kind: "cancelled", detail: "cancelled by its key" } : undefined),
    });
    // Assess
    expect(outcome).toEqual({
      kind: "stopped",
      reason: { kind: "cancelled", detail: "cancelled by its key" },
      remaining: 2,
    });
    expect(steps).toBe(2);
  });

  it("a runner's refusal at the budget cap becomes { kind: stopped, reason: budget }; other errors still throw", async () => {
    // Prepare: a cap of 40 rollouts, counted by the runner as the coordinator counts them.
    let used = 0;
    const capped = (cap: number, refusal: () => Error) => ({
      ...setup,
      runnerFor: (id: string, policy: Parameters<ReturnType<typeof inProcessRunners>>[1], seed: number) => {
        const run = inProcessRunners(setup.env)(id, policy, seed);
        return (t: Parameters<typeof run>[0], h: Parameters<typeof run>[1], s: number) =>
          used++ >= cap ? Promise.reject(refusal()) : run(t, h, s);
      },
    });
    // Act
    const outcome = await runExperiment(
      config,
      capped(40, () => new BudgetExceededError("budget cap of 40 rollouts reached")),
    );
    used = 0;
    const failed = runExperiment(
      config,
      capped(40, () => new Error("endpoint down")),
    );
    // Assess
    expect(outcome).toMatchObject({
      kind: "stopped",
      reason: { kind: "budget", detail: "budget cap of 40 rollouts reached" },
    });
    await expect(failed).rejects.toThrow("endpoint down");
  });
});
