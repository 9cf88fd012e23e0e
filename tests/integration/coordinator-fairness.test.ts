import { describe, expect, it, inject } from "vitest";
import { ExperimentRequest, cancelExperiment, startExperiment } from "@harness-s/core/experiment";
import { systemClock } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startExperimentStack, waitForExperiment } from "../../packages/cli/src/runtime/local-aws.ts";

// One key's long run must not keep another key's short run queued (the coordinator used to take
// a batch of runs and finish the first before polling again), and a running run can be cancelled.
const setup = embeddedSetup(defaultEmbeddedSettings);

describe("the coordinator on the local stack (DynamoDB Local, fauxqs), default settings", () => {
  it("finishes a short run of key B while key A's long run is still going, then cancels A at a step boundary", async () => {
    // Prepare
    const stack = await startExperimentStack(setup, "test", undefined, { dynamoEndpoint: inject("dynamoEndpoint") });
    const start = (id: string, key: string, steps: number) =>
      startExperiment(ExperimentRequest.parse({ seeds: [2], arms: ["grpo"], train: { steps, batchSize: 8, curveEvery: 0, auditEvery: 0 }, evalTasks: 4 }), key, {
        experiments: stack.stores.experiments,
        coordinator: stack.queues.coordinator.queue,
        clock: systemClock,
        newId: () => id,
        slots: { meter: stack.stores.meter, limit: 2 },
      });
    try {
      // Act
      await start("exp_long", "key-a", 200);
      await new Promise((r) => setTimeout(r, 1000));
      await start("exp_short", "key-b", 1);
      const short = await waitForExperiment(stack, "exp_short");
      const longWhileShortEnded = await stack.stores.experiments.get("exp_long");
      await cancelExperiment("exp_long", { id: "key-a", scopes: ["experiments"] }, { experiments: stack.stores.experiments, clock: systemClock, meter: stack.stores.meter });
      const long = await waitForExperiment(stack, "exp_long");
      // Assess
      expect(short.status).toBe("done");
      expect(["queued", "running"]).toContain(longWhileShortEnded!.status);
      expect(long.status).toBe("cancelled");
      expect(long.progress.done).toBeLessThan(200);
      expect(await stack.stores.meter.slotsHeld("key-a")).toBe(0);
      expect(await stack.stores.meter.slotsHeld("key-b")).toBe(0);
    } finally {
      await stack.stop();
    }
  }, 180_000);
});
