import { queuedExperimentDeps } from "@harness-s/functions/coordinator/queued-experiment";
import {
  ExperimentPlan,
  TERMINAL_STATES,
  startExperiment,
  type ExperimentConfig,
  type ExperimentDeps,
  type ExperimentRecord,
  type ExperimentSummary,
  type UnitPolicies,
} from "@harness-s/core/experiment";
import { LocalPolicyEndpoints } from "@harness-s/core/rescue";
import { systemClock, ValidationError, type Policy, type Protocol } from "@harness-s/core";
import type { SetupForProtocol } from "@harness-s/envs";
import { startLocalStack, type LocalStack, type LocalStackOptions } from "@harness-s/functions/local/stack";

type Setup = Omit<ExperimentDeps, "onProgress">;

/**
 * The local stack's coordinator wiring: each run gets the setup of its request's protocol, and
 * policies are registered with the in-process endpoint.
 */
export function localQueuedExperiment(setupFor: SetupForProtocol, endpoints: LocalPolicyEndpoints): NonNullable<LocalStackOptions["prepareExperiment"]> {
  return async (record, { stores, queues }) => {
    const setup = setupFor(record.request.protocol);
    const unitIds = new WeakMap<Policy, string>();
    const policies: UnitPolicies = {
      create: async (unit, seed) => {
        const id = `${record.id}/${unit}/attempt-${record.attempts}`;
        const policy = setup.createPolicy(seed);
        endpoints.register(id, policy);
        unitIds.set(policy, id);
        return { id, policy };
      },
      attach: async (id) => {
        const policy = endpoints.get(id);
        if (policy) unitIds.set(policy, id);
        return policy;
      },
      release: async (id) => endpoints.release(id),
    };
    const deps = await queuedExperimentDeps(setup, {
      ...stores,
      dispatch: queues.dispatch.queue,
      vote: queues.vote.queue,
      endpointId: (id, policy) => {
        const held = unitIds.get(policy);
        if (held) return held;
        endpoints.register(id, policy);
        return id;
      },
    })(record);
    return { ...deps, policies };
  };
}

/**
 * A local stack whose coordinator runs experiments of `setup` through the queues and tables;
 * `setup` must be built for the protocol of the runs it is given (they are refused otherwise).
 */
export async function startExperimentStack(
  setup: Setup,
  protocol: Protocol,
  log?: (line: string) => void,
  opts: Pick<LocalStackOptions, "coordinatorSliceMs" | "dynamoEndpoint" | "sqsEndpoint" | "panel"> = {},
): Promise<LocalStack> {
  const endpoints = new LocalPolicyEndpoints(setup.env);
  const setupFor: SetupForProtocol = (asked) => {
    if (asked !== protocol) throw new ValidationError("experiment", [`this stack runs ${protocol}-protocol experiments, not ${asked}`]);
    return setup;
  };
  return startLocalStack({ tasks: { get: async () => undefined }, policies: endpoints, prepareExperiment: localQueuedExperiment(setupFor, endpoints), log, ...opts });
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
  stackOptions: Pick<LocalStackOptions, "dynamoEndpoint" | "panel"> = {},
): Promise<ExperimentSummary> {
  const stack = await startExperimentStack(setup, config.protocol, log, stackOptions);
  try {
    const req = ExperimentPlan.parse({
      arms: config.arms,
      seeds: config.seeds,
      train: config.train,
      evalSamples: config.evalSamples,
      evalTasks: config.evalTasks,
      protocol: config.protocol,
    });
    const started = await startExperiment(req, "cli", {
      experiments: stack.stores.experiments,
      coordinator: stack.queues.coordinator.queue,
      clock: systemClock,
      newId: () => `exp_cli_${Date.now()}`,
    });
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
    if (record && TERMINAL_STATES.includes(record.status)) return record;
    await systemClock.sleep(200);
  }
}
