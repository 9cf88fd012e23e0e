import { queuedExperimentDeps } from "../../../../functions/coordinator/queued-experiment.ts";
import {
  ExperimentRequest,
  LocalPolicyEndpoints,
  startExperiment,
  systemClock,
  type ExperimentConfig,
  type ExperimentDeps,
  type ExperimentRecord,
  type ExperimentSummary,
} from "@harness-s/core";
import { startLocalStack, type LocalStack, type LocalStackOptions } from "../local-stack.ts";

type Setup = Omit<ExperimentDeps, "onProgress">;

/** The local stack's coordinator wiring: policies are registered with the in-process endpoint. */
export function localQueuedExperiment(setup: Setup, endpoints: LocalPolicyEndpoints): NonNullable<LocalStackOptions["prepareExperiment"]> {
  return (record, { stores, queues }) =>
    queuedExperimentDeps(setup, {
      ...stores,
      dispatch: queues.dispatch.queue,
      vote: queues.vote.queue,
      endpointId: (id, policy) => {
        endpoints.register(id, policy);
        return id;
      },
    })(record);
}

/** A local stack whose coordinator runs experiments of `setup` through the queues and tables. */
export async function startExperimentStack(setup: Setup, log?: (line: string) => void, opts: { coordinatorSliceMs?: number } = {}): Promise<LocalStack> {
  const endpoints = new LocalPolicyEndpoints(setup.env);
  return startLocalStack({ tasks: { get: async () => undefined }, policies: endpoints, prepareExperiment: localQueuedExperiment(setup, endpoints), log, ...opts });
}

/**
 * `harness-s experiment --runtime local-aws`: the experiment is recorded, queued to the
 * coordinator, run through dispatch and vote, and read back from the Experiments table.
 */
export async function runExperimentLocalAws(
  config: ExperimentConfig,
  setup: Setup,
  onProgress: (done: number, label: string) => void,
  log?: (line: string) => void,
): Promise<ExperimentSummary> {
  const stack = await startExperimentStack(setup, log);
  try {
    const req = ExperimentRequest.parse({ arms: config.arms, seeds: config.seeds, train: config.train, evalSamples: config.evalSamples });
    const started = await startExperiment(req, "cli", { experiments: stack.stores.experiments, coordinator: stack.queues.coordinator.queue, clock: systemClock, newId: () => `exp_cli_${Date.now()}` });
    const record = await waitForExperiment(stack, started.id, onProgress);
    if (record.status !== "done" || !record.summary) throw new Error(`experiment ${record.id} ended ${record.status}: ${record.error ?? record.stopReason ?? "no summary"}`);
    return record.summary;
  } finally {
    await stack.stop();
  }
}

export async function waitForExperiment(stack: LocalStack, id: string, onProgress?: (done: number, label: string) => void): Promise<ExperimentRecord> {
  for (;;) {
    const record = await stack.stores.experiments.get(id);
    if (record) onProgress?.(record.progress.done, record.progress.label);
    if (record && ["done", "stopped", "failed"].includes(record.status)) return record;
    await systemClock.sleep(200);
  }
}
