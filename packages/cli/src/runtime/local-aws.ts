import { queuedExperimentDeps } from "@harness-s/functions/experiment-setup";
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
import { LocalPolicyEndpoints, type PolicyEndpoints, type ServiceSource } from "@harness-s/core/dispatch";
import {
  systemClock,
  NotFoundError,
  ValidationError,
  type Environment,
  type Policy,
  type Protocol,
  type RolloutRunner,
} from "@harness-s/core";
import type { SetupForProtocol } from "@harness-s/envs";
import type { UsageReport } from "@harness-s/functions/experiment-setup";
import { startLocalStack, type LocalStack, type LocalStackOptions, type Stores } from "@harness-s/functions/local";

type Setup = Omit<ExperimentDeps, "onProgress">;

/**
 * How the coordinator finds a run's setup: by its protocol alone (the embedded suite, as before),
 * or from the whole record (its environment, model and protocol: {@link ExperimentSetups}).
 */
export type SetupsOfRuns =
  | SetupForProtocol
  | { forRun: (record: ExperimentRecord, stores: Stores, meter?: UsageReport) => Promise<Setup> };

/**
 * The policies a local stack's dispatch samples, each in the environment of the run that
 * registered it (the served default's, `env`, for one registered without).
 */
export class RunPolicyEndpoints implements PolicyEndpoints {
  private readonly fallback: LocalPolicyEndpoints;
  private readonly where = new Map<string, LocalPolicyEndpoints>();

  constructor(env: Environment) {
    this.fallback = new LocalPolicyEndpoints(env);
  }

  register(policyId: string, policy: Policy, env?: Environment): void {
    const at = env ? new LocalPolicyEndpoints(env) : this.fallback;
    at.register(policyId, policy);
    this.where.set(policyId, at);
  }

  get(policyId: string): Policy | undefined {
    return this.where.get(policyId)?.get(policyId);
  }

  release(policyId: string): void {
    this.where.get(policyId)?.release(policyId);
    this.where.delete(policyId);
  }

  runner(source: ServiceSource): Promise<RolloutRunner> {
    const at = this.where.get(source.policyId);
    if (!at) throw new NotFoundError("policy", source.policyId);
    return at.runner(source);
  }
}

/**
 * A policy kept at a worker (a token policy) is freed there when its unit ends; an in-process one has nothing to free.
 */
const freeAtWorker = async (policy: Policy | undefined) =>
  (policy as { release?: () => Promise<void> } | undefined)?.release?.();

/**
 * The local stack's coordinator wiring: each run gets its setup (its protocol's, or its record's:
 * environment, model and protocol), and policies are registered with the in-process endpoint in
 * the run's environment.
 */
export function localQueuedExperiment(
  setups: SetupsOfRuns,
  endpoints: LocalPolicyEndpoints | RunPolicyEndpoints,
  { rolloutsInProcess = false }: { rolloutsInProcess?: boolean } = {},
): NonNullable<LocalStackOptions["prepareExperiment"]> {
  // A run of another environment must be sampled in it: only RunPolicyEndpoints keeps an environment per policy.
  if (typeof setups !== "function" && !(endpoints instanceof RunPolicyEndpoints))
    throw new Error("runs set up from their records need RunPolicyEndpoints");
  return async (record, { stores, queues, consumption }) => {
    const setup =
      typeof setups === "function"
        ? setups(record.request.protocol)
        : await setups.forRun(record, stores, (used) => consumption.record(used));
    const register = (id: string, policy: Policy) =>
      endpoints instanceof RunPolicyEndpoints
        ? endpoints.register(id, policy, setup.env)
        : endpoints.register(id, policy);
    const unitIds = new WeakMap<Policy, string>();
    const policies: UnitPolicies = {
      create: async (unit, seed) => {
        const id = `${record.id}/${unit}/attempt-${record.attempts}`;
        const policy = setup.createPolicy(seed);
        register(id, policy);
        unitIds.set(policy, id);
        return { id, policy };
      },
      attach: async (id) => {
        const policy = endpoints.get(id);
        if (policy) unitIds.set(policy, id);
        return policy;
      },
      release: async (id) => {
        const policy = endpoints.get(id);
        endpoints.release(id);
        await freeAtWorker(policy);
      },
    };
    const deps = await queuedExperimentDeps(setup, {
      ...stores,
      // With dispatch in processes of their own (`serve --dispatch-processes`), a run's rollouts stay with its policies,
      // in the coordinator's process: another process cannot sample a policy held in this one.
      ...(rolloutsInProcess ? {} : { dispatch: queues.dispatch.queue }),
      vote: queues.vote.queue,
      endpointId: (id, policy) => {
        const held = unitIds.get(policy);
        if (held) return held;
        register(id, policy);
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
  opts: Pick<
    LocalStackOptions,
    "coordinatorSliceMs" | "dynamoEndpoint" | "sqsEndpoint" | "panel" | "allowLoopbackEndpoints"
  > = {},
): Promise<LocalStack> {
  const endpoints = new LocalPolicyEndpoints(setup.env);
  const setupFor: SetupForProtocol = (asked) => {
    if (asked !== protocol)
      throw new ValidationError("experiment", [`this stack runs ${protocol}-protocol experiments, not ${asked}`]);
    return setup;
  };
  return startLocalStack({
    tasks: { get: async () => undefined },
    policies: endpoints,
    prepareExperiment: localQueuedExperiment(setupFor, endpoints),
    log,
    ...opts,
  });
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
    if (record.status !== "done" || !record.summary)
      throw new Error(
        `experiment ${record.id} ended ${record.status}: ${record.error ?? record.stopReason ?? "no summary"}`,
      );
    return record.summary;
  } finally {
    await stack.stop();
  }
}

export async function waitForExperiment(
  stack: LocalStack,
  id: string,
  onProgress?: (done: number, label: string) => void,
): Promise<ExperimentRecord> {
  for (;;) {
    const record = await stack.stores.experiments.get(id);
    if (record) onProgress?.(record.progress.done, record.progress.label);
    if (record && TERMINAL_STATES.includes(record.status)) return record;
    await systemClock.sleep(200);
  }
}
