import type { Task } from "@harness-s/core";
import type { VoterPanel } from "@harness-s/core/voting";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import type { LocalWorkerOptions } from "@harness-s/functions/local";
import { panelRouting } from "../panel-file.ts";
import { cliIo } from "../family-io.ts";
import type { ModelAtWorker } from "@harness-s/functions/experiment-setup";
import { ExperimentSetups } from "./experiment-setups.ts";
import { RunPolicyEndpoints, localQueuedExperiment } from "./local-aws.ts";

/** The entries of serve's workers: its thread's, and each worker process's (`--dispatch-processes`). */
export const SERVE_WORKERS = {
  thread: new URL("./serve-workers-thread.mjs", import.meta.url),
  process: new URL("./serve-worker-process.mjs", import.meta.url),
} as const;

/** What `serve` hands its workers' thread: the tasks rescues may name, and the voter panel it parsed. */
export interface ServeWorkersData {
  tasks: Task[];
  panel?: VoterPanel;
  /** `--allow-loopback-endpoints`: callers' endpoints and environments may be on loopback. */
  allowLoopbackEndpoints: boolean;
  /** `--allow-endpoint-cidr`: private blocks callers' endpoints and environments may be in. */
  allowEndpointCidrs: string[];
  /**
   * The families experiments may run on (each with the options it opens with), and the base models language-model
   * policies train on at their workers.
   */
  /** An experiment's rollouts run in its coordinator, not through the queue (dispatch runs in processes of its own). */
  rolloutsInProcess?: boolean;
  /** A coordinator attempt's lease on its run, unrenewed (default 120 s; a test of a killed coordinator: seconds). */
  coordinatorLeaseMs?: number;
  experiments?: {
    families: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
    models?: readonly ModelAtWorker[];
  };
}

/**
 * The workers `serve` runs (rescue rollouts on the embedded policy, the vote worker with the panel, the coordinator's
 * experiments with seeds built on a thread of their own), built from the data serve hands them: on the workers' thread
 * (`serve-workers-thread.ts`) and in each worker process (`serve-worker-process.ts`).
 */
export async function buildServeWorkers(raw: unknown): Promise<LocalWorkerOptions> {
  const data = raw as ServeWorkersData;
  const setupFor = embeddedSetups(defaultEmbeddedSettings, offThreadInstances());
  const setup = setupFor("test");
  const policies = new RunPolicyEndpoints(setup.env);
  policies.register("default", setup.createPolicy(1));
  const byId = new Map(data.tasks.map((t) => [t.id, t]));
  // A run on another environment opens it through the registry (once per run, stopped when the run ends); the embedded
  // suite's as before.
  const experiments = new ExperimentSetups({
    embedded: setupFor,
    families: data.experiments?.families ?? {},
    ...(data.experiments?.models ? { models: data.experiments.models } : {}),
    outbound: { allowLoopback: data.allowLoopbackEndpoints, allowCidrs: data.allowEndpointCidrs },
    io: cliIo((line) => process.stderr.write(`${line}\n`)),
  });
  return {
    tasks: { get: async (id) => byId.get(id) },
    policies,
    ...(data.panel ? { panel: panelRouting(data.panel) } : {}),
    prepareExperiment: localQueuedExperiment(experiments, policies, {
      rolloutsInProcess: data.rolloutsInProcess ?? false,
    }),
    allowLoopbackEndpoints: data.allowLoopbackEndpoints,
    allowEndpointCidrs: data.allowEndpointCidrs,
    ...(data.coordinatorLeaseMs ? { coordinatorLeaseMs: data.coordinatorLeaseMs } : {}),
    // A caller's rescue may name the embedded suite as its environment (its tasks by id, as text).
    builtinEnvironments: { embedded: new TextEnvironment(setup.env) },
  };
}
