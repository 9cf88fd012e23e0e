import type { Task } from "@harness-s/core";
import type { VoterPanel } from "@harness-s/core/voting";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import { runWorkersThread } from "@harness-s/functions/local";
import { panelRouting } from "../panel-file.ts";
import { cliIo } from "../family-io.ts";
import type { ModelAtWorker } from "@harness-s/functions/experiment-setup";
import { ExperimentSetups } from "./experiment-setups.ts";
import { RunPolicyEndpoints, localQueuedExperiment } from "./local-aws.ts";

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
  experiments?: {
    families: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
    models?: readonly ModelAtWorker[];
  };
}

// The thread's body: the workers `serve` runs (rescue rollouts on the embedded policy, the vote
// worker with the panel, the coordinator's experiments with seeds built on a thread of their
// own), wired as in process, but off the API's event loop. (Only a type is exported: importing
// it elsewhere as a value would run this body there.)
await runWorkersThread(async (raw) => {
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
    prepareExperiment: localQueuedExperiment(experiments, policies),
    allowLoopbackEndpoints: data.allowLoopbackEndpoints,
    allowEndpointCidrs: data.allowEndpointCidrs,
    // A caller's rescue may name the embedded suite as its environment (its tasks by id, as text).
    builtinEnvironments: { embedded: new TextEnvironment(setup.env) },
  };
});
