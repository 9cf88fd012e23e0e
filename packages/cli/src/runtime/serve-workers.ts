import { LocalPolicyEndpoints } from "@harness-s/core/rescue";
import type { Task } from "@harness-s/core";
import type { VoterPanel } from "@harness-s/core/voting";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import { runWorkersThread } from "@harness-s/functions/local/workers-thread";
import { panelRouting } from "../panel-file.ts";
import { localQueuedExperiment } from "./local-aws.ts";

/** What `serve` hands its workers' thread: the tasks rescues may name, and the voter panel it parsed. */
export interface ServeWorkersData {
  tasks: Task[];
  panel?: VoterPanel;
  /** `--allow-loopback-endpoints`: callers' endpoints and environments may be on loopback. */
  allowLoopbackEndpoints: boolean;
  /** `--allow-endpoint-cidr`: private blocks callers' endpoints and environments may be in. */
  allowEndpointCidrs: string[];
}

// The thread's body: the workers `serve` runs (rescue rollouts on the embedded policy, the vote
// worker with the panel, the coordinator's experiments with seeds built on a thread of their
// own), wired as in process, but off the API's event loop. (Only a type is exported: importing
// it elsewhere as a value would run this body there.)
await runWorkersThread(async (raw) => {
  const data = raw as ServeWorkersData;
  const setupFor = embeddedSetups(defaultEmbeddedSettings, offThreadInstances());
  const setup = setupFor("test");
  const policies = new LocalPolicyEndpoints(setup.env);
  policies.register("default", setup.createPolicy(1));
  const byId = new Map(data.tasks.map((t) => [t.id, t]));
  return {
    tasks: { get: async (id) => byId.get(id) },
    policies,
    ...(data.panel ? { panel: panelRouting(data.panel) } : {}),
    prepareExperiment: localQueuedExperiment(setupFor, policies),
    allowLoopbackEndpoints: data.allowLoopbackEndpoints,
    allowEndpointCidrs: data.allowEndpointCidrs,
    // A caller's rescue may name the embedded suite as its environment (its tasks by id, as text).
    builtinEnvironments: { embedded: new TextEnvironment(setup.env) },
  };
});
