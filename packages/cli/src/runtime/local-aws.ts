import {
  ExperimentRequest,
  LocalPolicyEndpoints,
  queuedRolloutRunner,
  queuedVoter,
  startExperiment,
  systemClock,
  type ExperimentConfig,
  type ExperimentDeps,
  type ExperimentRecord,
  type ExperimentSummary,
  type SeedInstance,
} from "@harness-s/core";
import { startLocalStack, type LocalStack, type LocalStackOptions } from "../local-stack.ts";

type Setup = Omit<ExperimentDeps, "onProgress">;

/**
 * How the coordinator runs an experiment on the local stack: each seed's frozen pool is stored
 * in the Pools table, every rollout goes through the dispatch queue to a worker sampling from
 * the registered policy, and every ballot through the vote queue to the vote worker.
 */
export function queuedExperimentDeps(setup: Setup, endpoints: LocalPolicyEndpoints): NonNullable<LocalStackOptions["prepareExperiment"]> {
  return async (record, { stores, queues }) => {
    const poolIds = new Map<number, string>();
    for (const seed of record.request.seeds) {
      const inst: SeedInstance = await setup.instance(seed);
      const id = `${record.id}/pool/${seed}`;
      await stores.pools.put({ ...inst.evolution.pool, id });
      poolIds.set(seed, id);
    }
    const voters = setup.voters.map((v) => queuedVoter(v.id, { namespace: record.id, queue: queues.vote.queue, ballots: stores.ballots, clock: systemClock }));
    return {
      ...setup,
      voters,
      runnerFor: (policyId, policy, seed) => {
        const id = `${record.id}/${policyId}`;
        endpoints.register(id, policy);
        return queuedRolloutRunner({
          jobId: id,
          policyId: id,
          poolId: poolIds.get(seed)!,
          policyVersion: () => policy.version(),
          dispatch: queues.dispatch.queue,
          rollouts: stores.rollouts,
          clock: systemClock,
        });
      },
    };
  };
}

/** A local stack whose coordinator runs experiments of `setup` through the queues and tables. */
export async function startExperimentStack(setup: Setup, log?: (line: string) => void): Promise<LocalStack> {
  const endpoints = new LocalPolicyEndpoints(setup.env);
  return startLocalStack({ tasks: { get: async () => undefined }, policies: endpoints, prepareExperiment: queuedExperimentDeps(setup, endpoints), log });
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
