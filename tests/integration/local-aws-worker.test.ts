import { beforeAll, describe, expect, inject, it } from "vitest";
import { ExperimentConfig, runExperimentToEnd } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { defaultEmbeddedSettings, embeddedSetups } from "@harness-s/envs";
import { runExperimentLocalAws } from "../../packages/cli/src/runtime/local-aws.ts";
import { workerPolicySetup } from "@harness-s/functions/experiment-setup";
import { sharedPolicyWorker } from "../run-policy-worker.ts";

// Issue 57, item 6: `harness-s experiment --runtime local-aws --policy worker` runs the worker's
// policies through the local stack (DynamoDB Local, fauxqs, the coordinator and dispatch
// handlers) the way serve's runs at a worker do: the coordinator registers each unit's token
// policy in process (localQueuedExperiment) and dispatch samples it at the worker. The same seeded
// configuration in process gives the same summary. Tiny: the embedded suite at the tiny model,
// one seed, two arms, one step of a group of two, one task per evaluation, no profile measurement.
// At the integration run's shared worker (tests/shared-policy-worker.ts).
let worker: { url: string; token: string };

beforeAll(async () => {
  worker = await sharedPolicyWorker();
}, 300_000);

const config = ExperimentConfig.parse({
  seeds: [1],
  arms: ["grpo", "harness-s"],
  train: TrainConfig.parse({ steps: 1, batchSize: 1, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 }),
  evalTasks: 1,
  evalSamples: 3,
});
/**
 * The CLI's setup with --policy worker (no profile measurement: --profile-budget 0 leaves a hand-written pool's as
 * evolved).
 */
const atWorker = () =>
  workerPolicySetup(embeddedSetups(defaultEmbeddedSettings)("test"), {
    url: worker.url,
    token: worker.token,
    model: "tiny",
  });

describe("experiment --runtime local-aws --policy worker (issue 57, item 6)", () => {
  it("runs the worker's policies through the queues and handlers, and its summary is the in-process run's", async () => {
    const queued = atWorker();
    const viaQueues = await runExperimentLocalAws(config, queued, () => undefined, undefined, {
      dynamoEndpoint: inject("dynamoEndpoint"),
    });
    // Its policies sampled at the worker (every rollout's turns through the dispatch handler).
    expect(queued.sampled.turns).toBeGreaterThan(0);
    const inProcess = await runExperimentToEnd(config, atWorker());
    expect(viaQueues.arms.map((a) => a.name)).toEqual(["grpo", "harness-s"]);
    expect(viaQueues).toEqual(inProcess);
  }, 900_000);
});
