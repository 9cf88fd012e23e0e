import { observability } from "./observability";
import { policyGpuEndpoint } from "./policy-endpoint";
import { reportStorage } from "./reports";
import { storage } from "./storage";
import {
  API_MEMORY,
  API_TIMEOUT,
  CONSOLE_BUNDLE,
  DISPATCH_CONCURRENCY,
  DISPATCH_DEAD_LETTERS,
  LAMBDA_RUNTIME,
  WORKERS,
} from "../infra/settings";

/**
 * The serverless control plane: tables; one queue per worker, each with a DLQ, subscribed with
 * partial batch responses; the router API as a Function URL; the secrets for the policy
 * endpoint and LLM voters, given to the functions that use them through `link`; and, unless
 * `gpuEndpoint` is false, the managed GPU endpoint that serves the policy (stacks/policy-endpoint.ts),
 * linked to dispatch and the coordinator (its URL, never its token, to the API too); the bucket of experiments' reports
 * (stacks/reports.ts),
 * written by the coordinator and read by the API.
 */
export async function controlPlane(opts: { gpuEndpoint: boolean } = { gpuEndpoint: true }) {
  const t = storage();
  const reports = reportStorage();
  const {
    policyEndpoint,
    policyToken,
    llmApiKey,
    voterPanel,
    voterKeys,
    gatewayConfig,
    priceList,
    endpointCidrs,
    poolProposer,
    bootstrapAdminKeyHash,
  } = secrets();
  const panel = [llmApiKey, voterPanel, voterKeys];
  const gpu = opts.gpuEndpoint ? policyGpuEndpoint(policyToken) : undefined;
  const policy = gpu ? [policyEndpoint, policyToken, gpu.endpoint] : [policyEndpoint, policyToken];

  const profileQueue = workerQueue("Profile", WORKERS.profile);
  const voteQueue = workerQueue("Vote", WORKERS.vote);
  const dispatchQueue = workerQueue("Dispatch", WORKERS.dispatch);
  const coordinatorQueue = workerQueue("Coordinator", WORKERS.coordinator);

  const { profileWorker, voteWorker, dispatchWorker, coordinatorWorker } = subscribeWorkers(
    t,
    { profile: profileQueue, vote: voteQueue, dispatch: dispatchQueue, coordinator: coordinatorQueue },
    { panel, policy, endpointCidrs, poolProposer, reportsBucket: reports.bucket },
    gpu,
  );
  const deadLetters = subscribeDeadLetters(t, dispatchQueue.deadLetters);

  // The first admin key's hash: the API only (the one function that authenticates keys).
  // Reports: the API reads them (ReportsRead), the coordinator above writes them.
  // The policy endpoint's URL (never its token): the API offers experiments on callers' environments only where one is
  // configured.
  const policyUrl = gpu ? [policyEndpoint, gpu.endpoint] : [policyEndpoint];
  const api = apiFunction(t, [
    profileQueue,
    dispatchQueue,
    coordinatorQueue,
    reports.read,
    gatewayConfig,
    priceList,
    endpointCidrs,
    bootstrapAdminKeyHash,
    ...panel,
    ...policyUrl,
  ]);

  // Alarms (to the AlarmEmail secret's address) and a dashboard over all of the above: stacks/observability.ts.
  observability({
    workers: {
      profile: { queue: profileQueue, subscriber: profileWorker },
      vote: { queue: voteQueue, subscriber: voteWorker },
      dispatch: { queue: dispatchQueue, subscriber: dispatchWorker },
      coordinator: { queue: coordinatorQueue, subscriber: coordinatorWorker },
    },
    api,
    others: { DispatchDeadLetters: deadLetters },
    ...(gpu ? { gpu: gpu.health } : {}),
  });

  return {
    api: api.url,
    ...(gpu ? { policyEndpoint: gpu.endpoint.properties.url, policyWorkerImage: gpu.repository } : {}),
    profileQueue: profileQueue.url,
    dispatchQueue: dispatchQueue.url,
    voteQueue: voteQueue.url,
    coordinatorQueue: coordinatorQueue.url,
  };
}

type Worker = (typeof WORKERS)[keyof typeof WORKERS];

/**
 * The four workers' functions on their queues, each linked to what it reads and writes (and the usage tables: every
 * worker meters what each message cost to its payer); the ones that call the GPU endpoint in its VPC.
 */
function subscribeWorkers(
  t: ReturnType<typeof storage>,
  queues: Record<"profile" | "vote" | "dispatch" | "coordinator", sst.aws.Queue>,
  links: { panel: unknown[]; policy: unknown[]; endpointCidrs: unknown; poolProposer: unknown; reportsBucket: unknown },
  gpu: ReturnType<typeof policyGpuEndpoint> | undefined,
) {
  // Every worker meters what each message cost to its payer: the usage tables.
  const subscribe = (q: sst.aws.Queue, w: Worker, link: unknown[], opts: SubscribeOptions = {}) =>
    subscribeWorker(q, w, [...link, t.Usage, t.UsageDays], opts);

  const profileWorker = subscribe(queues.profile, WORKERS.profile, [t.Profiles, t.Processed]);
  const voteWorker = subscribe(queues.vote, WORKERS.vote, [t.Ballots, ...links.panel]);
  // Dispatch sends a deferred rollout back to its own queue (a fair queue: each message's key is its tenant).
  // The functions that call the GPU endpoint run in its VPC's private subnets (its balancer is internal).
  const clients = gpu ? { vpc: gpu.clients } : {};
  const dispatchWorker = subscribe(
    queues.dispatch,
    WORKERS.dispatch,
    [
      ...[t.Pools, t.Rollouts, t.RescueJobs, t.PolicyEndpoints, t.RunningPlaces, t.Processed],
      ...[queues.dispatch, links.endpointCidrs, ...links.policy],
    ],
    {
      maximumConcurrency: DISPATCH_CONCURRENCY,
      ...clients,
    },
  );
  // Its own queue too: a run longer than one invocation re-queues itself after each time slice.
  // Pool evolutions run here too: the caller's endpoint records, the jobs, the pools' profiles, the allowlist and the
  // LLM proposer.
  // It renders finished runs' plots (resvg, a native addon: installed beside the bundle) into the reports bucket.
  const coordinatorWorker = subscribe(
    queues.coordinator,
    WORKERS.coordinator,
    [
      t.Experiments,
      t.ExperimentSteps,
      t.PoolEvolutions,
      t.PolicyEndpoints,
      t.Profiles,
      links.endpointCidrs,
      links.poolProposer,
      t.Pools,
      t.Rollouts,
      t.Ballots,
      queues.dispatch,
      queues.vote,
      queues.coordinator,
      links.reportsBucket,
      ...links.policy,
      ...links.panel,
    ],
    { install: ["@resvg/resvg-js"], ...clients },
  );
  return { profileWorker, voteWorker, dispatchWorker, coordinatorWorker };
}

/** A worker's queue, with a DLQ that takes a message after the worker's retries. */
function workerQueue(name: string, w: Worker) {
  const dlq = new sst.aws.Queue(`${name}Dlq`);
  const queue = new sst.aws.Queue(`${name}Queue`, {
    dlq: { queue: dlq.arn, retry: w.retry },
    visibilityTimeout: w.visibility,
  });
  return Object.assign(queue, { deadLetters: dlq });
}

/**
 * The dispatch DLQ's consumer: a rescue's slot whose every delivery died (its invocation killed, out of memory, past
 * its timeout) is failed with ROLLOUT_LOST, so the rescue ends; it reads the rollouts and writes the rescue jobs.
 */
function subscribeDeadLetters(t: ReturnType<typeof storage>, dlq: sst.aws.Queue) {
  return dlq.subscribe(
    {
      handler: DISPATCH_DEAD_LETTERS.handler,
      runtime: LAMBDA_RUNTIME,
      timeout: DISPATCH_DEAD_LETTERS.timeout,
      memory: DISPATCH_DEAD_LETTERS.memory,
      link: [t.Rollouts, t.RescueJobs],
    },
    { batch: { size: DISPATCH_DEAD_LETTERS.batch, partialResponses: true } },
  );
}

/**
 * `maximumConcurrency`: the most invocations at once; `install`: packages put beside the bundle instead of in it
 * (native addons); `vpc`: the private subnets and group it runs in.
 */
type SubscribeOptions = {
  maximumConcurrency?: number;
  install?: string[];
  vpc?: ReturnType<typeof policyGpuEndpoint>["clients"];
};

/** A worker's function on its queue, with partial batch responses. */
function subscribeWorker(
  q: sst.aws.Queue,
  w: Worker,
  link: unknown[],
  { maximumConcurrency, install, vpc }: SubscribeOptions,
) {
  return q.subscribe(
    {
      handler: w.handler,
      runtime: LAMBDA_RUNTIME,
      timeout: w.timeout,
      memory: w.memory,
      link,
      ...(install ? { nodejs: { install } } : {}),
      ...(vpc ? { vpc } : {}),
    },
    {
      batch: { size: w.batch, partialResponses: true },
      ...(maximumConcurrency
        ? {
            transform: {
              eventSourceMapping: (args) => {
                args.scalingConfig = { maximumConcurrency };
              },
            },
          }
        : {}),
    },
  );
}

/** The secrets a deployment sets (`npx sst secret set …`); each stays "unset" until then. */
function secrets() {
  return {
    policyEndpoint: new sst.Secret("PolicyEndpointUrl", "unset"),
    /** The bearer token of a protocol-v2 policy worker (`harness-s policy-worker --token`). */
    policyToken: new sst.Secret("PolicyEndpointToken", "unset"),
    llmApiKey: new sst.Secret("LlmApiKey", "unset"),
    /** The voter panel (the JSON document of a `--voters` file) and the JSON object of the keys its voters name. */
    voterPanel: new sst.Secret("VoterPanel", "unset"),
    voterKeys: new sst.Secret("VoterKeys", "unset"),
    /** The Rank-1 gateway's configuration (JSON: functions/api/gateway-config.ts); unset: its routes answer 501. */
    gatewayConfig: new sst.Secret("GatewayConfig", "unset"),
    /** What the deployment pays per unit (JSON: PriceList in packages/core); unset: the public on-demand defaults. */
    priceList: new sst.Secret("PriceList", "unset"),
    /**
     * Private blocks callers' endpoints and environments may be in (a JSON array of CIDRs); unset: none. Instance
     * metadata stays refused.
     */
    endpointCidrs: new sst.Secret("EndpointCidrs", "unset"),
    /**
     * The LLM proposer of pool evolutions (JSON: PoolProposerConfig in functions/pool-proposer.ts; its key LlmApiKey);
     * unset: the template proposer.
     */
    poolProposer: new sst.Secret("PoolProposer", "unset"),
    /**
     * The SHA-256 hex digest of the operator's first admin secret: the API makes that admin key once
     * (docs/operations.md, Deploying); unset: none.
     */
    bootstrapAdminKeyHash: new sst.Secret("BootstrapAdminKeyHash", "unset"),
  };
}

/**
 * The router API: every table but the ballots (the keys' accounts, their secrets' hashes and
 * their events among them), the queues it sends to and `extra` linked. The gateway's requests
 * wait for a model completion (GATEWAY_LIMITS.leaseMs bounds one); its `stream: true` answers
 * are server-sent events, so the Function URL streams. It serves the web console (/console) too.
 */
function apiFunction(t: ReturnType<typeof storage>, extra: unknown[]) {
  return new sst.aws.Function("Api", {
    handler: "functions/api/lambda.handler",
    runtime: LAMBDA_RUNTIME,
    timeout: API_TIMEOUT,
    memory: API_MEMORY,
    url: true,
    streaming: true,
    // The web console (/console) is served by this function from its own copy of the built files.
    copyFiles: [{ from: CONSOLE_BUNDLE.from, to: CONSOLE_BUNDLE.to }],
    link: [
      t.Pools,
      t.Profiles,
      t.Decisions,
      t.ApiKeys,
      t.Keys,
      t.KeyEvents,
      t.Usage,
      t.UsageDays,
      t.Processed,
      t.Rollouts,
      t.RescueJobs,
      t.PolicyEndpoints,
      t.Experiments,
      t.ExperimentSteps,
      t.GatewayEpisodes,
      t.PoolEvolutions,
      ...extra,
    ],
  });
}
