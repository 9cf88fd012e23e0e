import { describe, expect, it, inject } from "vitest";
import { ExperimentConfig, ExperimentRequest, runExperimentToEnd, startExperiment } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { systemClock } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startExperimentStack, waitForExperiment } from "../../packages/cli/src/runtime/local-aws.ts";

// Its own file so that it runs beside the other local-aws tests, not after them.
const setup = embeddedSetup(defaultEmbeddedSettings);
const smallTrain = {
  steps: 2,
  batchSize: 4,
  curveEvery: 1,
  curveTasks: 4,
  auditEvery: 2,
  reanchorEvery: 1,
  reanchorBudget: 6,
};
const config = ExperimentConfig.parse({
  seeds: [3],
  arms: ["grpo", "harness-s"],
  train: TrainConfig.parse(smallTrain),
  evalSamples: 3,
  evalTasks: 6,
});

describe("a long experiment on the local stack (DynamoDB Local, fauxqs, coordinator handler)", () => {
  it("a run cut into time slices continues through the coordinator queue and gives the same summary", async () => {
    // Prepare: every attempt ends as soon as it may (after one training step), as a Lambda past its slice does
    const inProcess = await runExperimentToEnd(config, setup);
    const stack = await startExperimentStack(setup, "test", undefined, {
      coordinatorSliceMs: 0,
      dynamoEndpoint: inject("dynamoEndpoint"),
    });
    try {
      // Act
      const req = ExperimentRequest.parse({
        arms: config.arms,
        seeds: config.seeds,
        train: config.train,
        evalSamples: config.evalSamples,
        evalTasks: config.evalTasks,
      });
      const started = await startExperiment(req, "k1", {
        experiments: stack.stores.experiments,
        coordinator: stack.queues.coordinator.queue,
        clock: systemClock,
        newId: () => "exp_sliced",
      });
      const labels = new Set<string>();
      const record = await waitForExperiment(stack, started.id, (_done, label) => labels.add(label));
      // Assess
      // The stack's policies outlive an attempt, so each 2-step unit pauses after its first step
      expect(record).toMatchObject({ status: "done", attempts: 4, units: [] });
      expect(record.summary).toEqual(inProcess);
      expect([...labels].filter((l) => l.startsWith("continuing:")).length).toBeGreaterThan(0);
      expect(
        [...labels].every(
          (l) =>
            !l.startsWith("continuing:") ||
            /^continuing: [12] \(arm, seed\) units left(, (harness-s|grpo)\/3 paused after step 1)?$/.test(l),
        ),
      ).toBe(true);
    } finally {
      await stack.stop();
    }
  }, 240_000);
});
