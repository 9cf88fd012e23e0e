import { NotConfiguredError, type PoolStore, type RolloutStore } from "@harness-s/core";
import {
  envName,
  type CallerExperimentEnv,
  type ExperimentDeps,
  type ExperimentRecord,
} from "@harness-s/core/experiment";
import type { ProfileStore } from "@harness-s/core/profile";
import type { MessageQueue } from "@harness-s/core/messaging";
import type { BallotStore } from "@harness-s/core/voting";
import {
  RemotePolicy,
  TokenTrainer,
  policyProtocol,
  remoteUnitPolicies,
  tokenUnitPolicies,
  workerPolicyId,
} from "@harness-s/adapters/policy";
import type { OutboundPolicy } from "@harness-s/adapters/net";
import type { PanelRouting } from "@harness-s/adapters/llm";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetups } from "@harness-s/envs";
import { callerEnvSetup } from "../experiment-setup/caller-env-setup.ts";
import { modelOfRun, trainedAtWorker, type ModelAtWorker } from "../experiment-setup/trained-setup.ts";
import type { UsageReport } from "../experiment-setup/worker-setup.ts";
import { sharedTokenPolicy, tokenClient } from "../policy-endpoint.ts";
import { queuedExperimentDeps } from "./queued-experiment.ts";

/**
 * What a deployed run is set up with: the policy endpoint (serving `served`), the stores, the queues, the outbound
 * guard, the panel and the GPU meter.
 */
export interface DeployedRunContext {
  /** The models the policy endpoint serves, each at it (the stacks' SERVED_MODELS). */
  served: readonly ModelAtWorker[];
  stores: { pools: PoolStore; ballots: BallotStore; rollouts: RolloutStore; profiles: ProfileStore };
  queues: { dispatch?: MessageQueue; vote?: MessageQueue };
  outbound: OutboundPolicy;
  panel?: PanelRouting;
  /** Hears what the endpoint reports it spent (GPU seconds, tokens sampled and trained). */
  meter: UsageReport;
}

type DeployedRun = (record: ExperimentRecord, ctx: DeployedRunContext) => Promise<ExperimentDeps>;

/**
 * The embedded suite, each rollout through the dispatch queue and each ballot through the vote
 * queue: token policies of the run's model on the suite's text rendering at a protocol-v2
 * endpoint (the reference worker), else the embedded policy's protocol (policy-serve).
 */
const embeddedRun: DeployedRun = async (record, ctx) => {
  const { dispatch, vote } = ctx.queues;
  if (!dispatch || !vote) throw new NotConfiguredError("the coordinator needs the dispatch and vote queues linked");
  const at = modelOfRun(ctx.served, record.request.model);
  const v2 = (await policyProtocol(at.url, at.token)) === 2;
  const client = tokenClient(at.url, at.token, ctx.meter);
  const shared = { ...sharedTokenPolicy, baseModel: at.name };
  const embedded = {
    ...embeddedSetups(defaultEmbeddedSettings)(record.request.protocol),
    ...(ctx.panel ? { voters: ctx.panel.voters, panel: ctx.panel } : {}),
  };
  let n = 0;
  const idOf = () => `${record.id}/attempt-${record.attempts}/p${++n}`;
  const setup = v2
    ? {
        ...embedded,
        env: new TextEnvironment(embedded.env),
        createPolicy: (seed: number) => new TokenTrainer(client, { ...shared, policyId: workerPolicyId(idOf()), seed }),
      }
    : { ...embedded, createPolicy: () => new RemotePolicy(at.url, idOf()) };
  const deps = await queuedExperimentDeps(setup, {
    ...ctx.stores,
    dispatch,
    vote,
    endpointId: (_id, policy) => (policy as RemotePolicy | TokenTrainer).id,
  })(record);
  // Unit policies stay at the endpoint, so a unit can continue in the next invocation.
  const unitId = (unit: string) => `${record.id}/${unit}/attempt-${record.attempts}`;
  return { ...deps, policies: v2 ? tokenUnitPolicies(client, unitId, shared) : remoteUnitPolicies(at.url, unitId) };
};

/**
 * Where a pool evolved first for a run is kept (the id the caller-environment setup gives it), so a later invocation of
 * the run trains on the same one.
 */
const evolvedPoolId = (record: ExperimentRecord) => `${record.id}/pool`;

/**
 * The caller's own OpenEnv server, as the local stack runs it (the same `callerEnvSetup` and
 * `trainedAtWorker`): each episode on the caller's server through the deployment's outbound guard,
 * run in this coordinator (the dispatch worker samples the embedded suite only), the policies the
 * run's model at the policy endpoint, the ballots the statistical voters' (here too). The pool is
 * the one `poolId` names (the key's own) or one evolved first on the dev split, kept in the Pools
 * and Profiles tables under the run so that every later invocation trains on it.
 */
const callerRun: DeployedRun = async (record, ctx) => {
  const env = record.request.env as CallerExperimentEnv;
  const evolvedBefore = env.poolId ? undefined : await ctx.stores.pools.get(evolvedPoolId(record));
  const opened = await callerEnvSetup(evolvedBefore ? { ...env, poolId: evolvedBefore.id } : env, record, {
    outbound: ctx.outbound,
    pools: ctx.stores.pools,
    profiles: ctx.stores.profiles,
    withPolicy: (base, rendering) =>
      trainedAtWorker(base, rendering, record, {
        served: ctx.served,
        meter: ctx.meter,
        run: `${record.id}-a${record.attempts}`,
      }),
  });
  if (!env.poolId && !evolvedBefore) {
    const { pool, initialProfiles } = (await opened.base.instance(record.request.seeds[0]!)).evolution;
    await Promise.all(Object.values(initialProfiles).map((p) => ctx.stores.profiles.put(pool.id, p)));
    await ctx.stores.pools.put(pool);
  }
  return queuedExperimentDeps(opened.base, { ...ctx.stores, endpointId: (id) => id })(record);
};

/** What the deployment runs experiments on, by the run's environment's name. */
const DEPLOYED_RUNS: Readonly<Record<string, DeployedRun>> = { embedded: embeddedRun, openenv: callerRun };

/**
 * What each built-in family would need that the deployment does not run (the local stack, `harness-s serve`, runs
 * them).
 */
const MISSING_SERVERS: Readonly<Record<string, string>> = {
  dbbench: "a database for its tasks (MySQL, or SQLite with its task data packaged into the coordinator)",
  appworld: "AppWorld's environment server",
  "swe-gym": "SWE-Gym's repository sandboxes",
};

/**
 * How the deployed coordinator sets up `record`'s run: the embedded suite, or the caller's own
 * OpenEnv server; a built-in family (its environment server not run by the deployment) is
 * NOT_CONFIGURED, naming what it would need.
 */
export function deployedRun(record: ExperimentRecord): DeployedRun {
  const name = envName(record.request.env);
  const run = DEPLOYED_RUNS[name];
  if (run) return run;
  throw new NotConfiguredError(
    `this deployment runs experiments on the embedded suite and on a caller's own OpenEnv server, not ${name}: it would need ${MISSING_SERVERS[name] ?? "its environment server"}, which this deployment does not run. Run ${name} under harness-s serve, or serve an environment yourself (harness-s env-serve) and post it as env {kind: "openenv", url, tasks}`,
  );
}
