import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { statisticalVoters, type Voter } from "@harness-s/core/voting";
import { systemClock, type TaskSource } from "@harness-s/core";
import type { EndpointCidrs } from "@harness-s/core/outbound";
import type { ExperimentDeps, ExperimentRecord } from "@harness-s/core/experiment";
import { rolloutRunners, type PolicyEndpoints } from "@harness-s/core/dispatch";
import { tellingStores } from "@harness-s/core/rescue";
import {
  CachedPoolStore,
  SqsQueue,
  DynamoRunningPlaces,
  FolderExperimentArtifacts,
  FullSlotsMemo,
  type PlaceStats,
  type RolloutWrites,
} from "@harness-s/adapters/stores";
import { ConsumptionMeter, meteredAwsClients } from "@harness-s/adapters/metering";
import { CallerPolicyRunners, type CallerPoliciesDeps } from "@harness-s/adapters/policy";
import { dynamoStores, type TableNames } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";
import { pollElastic } from "@harness-s/adapters/sqs";
import type { OutboundPolicy } from "@harness-s/adapters/net";
import type { PanelRouting } from "@harness-s/adapters/llm";
import { renderExperimentReport } from "@harness-s/adapters/report";
import { createCoordinatorHandler } from "../coordinator/handler.ts";
import { createDispatchHandler } from "../dispatch/handler.ts";
import { createDeadLetterHandler } from "../dispatch/dead-letters.ts";
import { createProfileHandler } from "../profile/handler.ts";
import { createVoteHandler } from "../vote/handler.ts";
import { DISPATCH_CONCURRENCY, DISPATCH_DEAD_LETTERS, WORKERS, memoryGb } from "../../infra/settings.ts";
import type { EventLogger } from "@harness-s/core/observability";
import { invocationBiller, type WorkerMetering } from "../worker-metering.ts";
import { workerLog } from "../sqs-worker.ts";
import { llmPoolProposer, type PoolProposerConfig } from "../pool-proposer.ts";

export type WorkerName = keyof typeof WORKERS;

/** "6 minutes" / "30 seconds" → seconds. */
export function seconds(duration: string): number {
  const [n, unit] = duration.split(" ");
  return Number(n) * (unit!.startsWith("minute") ? 60 : 1);
}
export type Stores = ReturnType<typeof dynamoStores>;
export type WorkerQueues = Record<WorkerName, { url: string; dlqUrl: string; queue: SqsQueue }>;

/** How long a local coordinator attempt runs before it re-queues its run (the Lambda's is COORDINATOR_SLICE_MS). */
export const LOCAL_COORDINATOR_SLICE_MS = 10_000;
/**
 * Coordinator invocations at once on a local stack: a pool evolution holds one from its start to
 * its end (a key at most `POOL_EVOLUTION_LIMITS.activePerKey`), an experiment one slice at a time,
 * so another key's run always finds a place. Deployed, Lambda runs as many as the queue holds.
 */
export const LOCAL_COORDINATOR_CONCURRENCY = 4;
/** Decisions' time to live in a local stack's table. */
export const LOCAL_DECISION_TTL_SECONDS = 7 * 24 * 3600;
/**
 * How a local stack writes rollouts: a rescue's that end together in one request (its store,
 * DynamoDB Local, shares the machine, where requests are the cost); the cloud's write each on
 * its own, the fewest write units (`ROLLOUT_WRITES`).
 */
export const LOCAL_ROLLOUT_WRITES: RolloutWrites = "grouped";

/** Where a local stack's workers find its tables and queues: plain data, so another thread can be handed it. */
export interface LocalWiring {
  dynamoEndpoint: string;
  sqsEndpoint: string;
  tables: TableNames;
  queues: Record<WorkerName, { url: string; dlqUrl: string }>;
  /** The folder finished runs' reports and plots are kept in (`<dir>/<experiment id>/`); none: no reports. */
  artifactsDir?: string;
}

/** What the workers run with (the parts that are code, not data). */
export interface LocalWorkerOptions {
  tasks: TaskSource;
  /** The policies dispatch samples from (the GPU endpoint in the cloud). */
  policies: PolicyEndpoints;
  /** Voters the vote worker runs (default: the statistical voters). */
  voters?: readonly Voter[];
  /** A voter panel: its voters run in the vote worker. */
  panel?: PanelRouting;
  /** How the coordinator builds a run's dependencies; without it, experiments fail with a clear error. */
  prepareExperiment?: (
    record: ExperimentRecord,
    stack: { stores: Stores; queues: WorkerQueues; consumption: ConsumptionMeter },
  ) => Promise<ExperimentDeps>;
  /** Run only these workers' pollers (default all four): the others run in processes of their own. */
  only?: readonly WorkerName[];
  /** The most dispatch invocations at once (Lambda's concurrency, locally; default `DISPATCH_CONCURRENCY`). */
  dispatchConcurrency?: number;
  /** A coordinator attempt re-queues its run after this long, as the Lambda does. */
  coordinatorSliceMs?: number;
  /** How long a coordinator attempt's lease on its run lasts unrenewed (default the use-case's, 120 s). */
  coordinatorLeaseMs?: number;
  /** Coordinator invocations at once (default `LOCAL_COORDINATOR_CONCURRENCY`). */
  coordinatorConcurrency?: number;
  /**
   * Let callers' endpoints and environments on loopback through the outbound guard (`serve
   * --allow-loopback-endpoints`); only this opens loopback.
   */
  allowLoopbackEndpoints?: boolean;
  /**
   * Private blocks callers' endpoints and environments may be in (`serve --allow-endpoint-cidr`); instance metadata
   * stays refused.
   */
  allowEndpointCidrs?: EndpointCidrs;
  /** This service's own environments a caller's rescue may name. */
  builtinEnvironments?: CallerPoliciesDeps["builtin"];
  /** The LLM proposer of pool evolutions, with its key; none: the template proposer. */
  poolProposer?: { config: PoolProposerConfig; apiKey?: string };
  log?: (line: string) => void;
  /**
   * Hears each rollout the dispatch worker stores, by its job and slot (serve: a status read waiting on that rescue
   * looks when told).
   */
  onRolloutStored?: (jobId: string, index: number) => void;
  /**
   * Where each worker's events go (one `queue.record` per record; a handler's or poller's note as `worker.note`); none:
   * failed records as text to `log`.
   */
  logger?: EventLogger;
}

/** The outbound guard's policy for callers' endpoints and environments, from the stack's options. */
export const localOutbound = (
  opts: Pick<LocalWorkerOptions, "allowLoopbackEndpoints" | "allowEndpointCidrs">,
): OutboundPolicy => ({
  allowLoopback: opts.allowLoopbackEndpoints ?? false,
  allowCidrs: opts.allowEndpointCidrs ?? [],
});

/** The stores and queues of a wiring, on clients of their own that report what they consume to `consumption`. */
export function connect(wiring: LocalWiring, consumption = new ConsumptionMeter()) {
  const local = { region: "us-east-1", credentials: localCredentials };
  const { ddb, doc, sqs } = meteredAwsClients(
    wiring.tables,
    { dynamo: { ...local, endpoint: wiring.dynamoEndpoint }, sqs: { ...local, endpoint: wiring.sqsEndpoint } },
    consumption,
  );
  const stores = dynamoStores(doc, wiring.tables, {
    decisionTtlSeconds: LOCAL_DECISION_TTL_SECONDS,
    rolloutWrites: LOCAL_ROLLOUT_WRITES,
  });
  const queue = (name: WorkerName) => ({ ...wiring.queues[name], queue: new SqsQueue(sqs, wiring.queues[name].url) });
  const queues: WorkerQueues = {
    profile: queue("profile"),
    dispatch: queue("dispatch"),
    vote: queue("vote"),
    coordinator: queue("coordinator"),
  };
  return { ddb, doc, sqs, stores, queues, consumption };
}

/** The callers' policies the workers sample rescues and pool evolutions at. */
const localCallers = (stores: Stores, opts: LocalWorkerOptions) =>
  new CallerPolicyRunners({
    endpoints: stores.endpoints,
    outbound: localOutbound(opts),
    clock: systemClock,
    ...(opts.builtinEnvironments ? { builtin: opts.builtinEnvironments } : {}),
  });

/** Each worker's own line sink: its events to `logger` when there is one, else `log` as it is. */
const lineSinks =
  ({ logger, log = () => undefined }: Pick<LocalWorkerOptions, "logger" | "log">) =>
  (name: WorkerName | "metering") =>
    logger ? workerLog(logger, name) : log;

/**
 * Pollers that invoke the `profile`, `dispatch`, `vote` and `coordinator` Lambda handlers with
 * real SQS event shapes, with the batch sizes of the deployed queues (`infra/settings.ts`), until
 * stopped. In the stack's own thread, or on a thread of their own (`startLocalStack`'s `workersOn`).
 */
export async function startLocalWorkers(
  wiring: LocalWiring,
  opts: LocalWorkerOptions,
): Promise<{ stop: () => Promise<void>; placeStats: () => PlaceStats }> {
  const logOf = lineSinks(opts);
  const log = logOf("metering");
  const { ddb, doc, sqs, stores, queues, consumption } = connect(wiring);
  const metering = (name: WorkerName): WorkerMetering => ({
    consumption,
    meter: stores.meter,
    memoryGb: memoryGb(WORKERS[name].memory),
    log,
  });
  let running = true;
  const pollers: Promise<void>[] = [];
  // The key's running places this process's dispatch holds (its holds, writes and conflicts: `placeStats`).
  const places = new DynamoRunningPlaces(doc, wiring.tables);
  // Each queue as Lambda's event source drives it: batches handed over as they arrive, up to the
  // function's concurrency (dispatch: DISPATCH_CONCURRENCY; the others one at a time). The dispatch DLQ's consumer
  // runs beside the dispatch worker (deployed: a function of its own on that DLQ).
  const poll = async (on: QueueToPoll, handler: Parameters<typeof pollElastic>[2]) => {
    if (opts.only && !opts.only.includes(on.worker)) return;
    const { arn, hold } = await queueHold(sqs, on.url, on.worker);
    const onError = (err: unknown) => {
      if (running) logOf(on.worker)(`${on.label} poller: ${err instanceof Error ? err.message : String(err)}`);
    };
    const { batchSize, maxInvocations } = on;
    pollers.push(
      pollElastic(sqs, { url: on.url, arn }, handler, {
        ...{ batchSize, waitSeconds: 1, hold, maxInvocations, onError },
        running: () => running,
      }),
    );
  };
  const startWorker = (name: WorkerName, handler: Parameters<typeof pollElastic>[2], maxInvocations = 1) =>
    poll(
      { worker: name, label: name, url: wiring.queues[name].url, batchSize: WORKERS[name].batch, maxInvocations },
      handler,
    );
  const startDeadLetters = (handler: Parameters<typeof pollElastic>[2]) =>
    poll(
      {
        worker: "dispatch",
        label: "dispatch DLQ",
        url: wiring.queues.dispatch.dlqUrl,
        batchSize: DISPATCH_DEAD_LETTERS.batch,
        maxInvocations: 1,
      },
      handler,
    );
  const stop = async () => {
    running = false;
    await Promise.all(pollers);
    // The pollers' own receives since the last invocation: the deployment's overhead.
    await invocationBiller(metering("dispatch"))([], 0).catch((err) => log(`metering at stop: ${String(err)}`));
    ddb.destroy();
    sqs.destroy();
  };
  try {
    const handlers = workerHandlers(opts, wiring, { stores, queues, consumption, places }, logOf, metering);
    await startWorker("profile", handlers.profile);
    await startWorker("dispatch", handlers.dispatch, opts.dispatchConcurrency ?? DISPATCH_CONCURRENCY);
    await startDeadLetters(handlers.deadLetters);
    await startWorker("vote", handlers.vote);
    await startWorker(
      "coordinator",
      handlers.coordinator,
      opts.coordinatorConcurrency ?? LOCAL_COORDINATOR_CONCURRENCY,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop, placeStats: () => ({ ...places.stats }) };
}

/** Each worker's handler as the local stack runs it, and the dispatch DLQ's consumer. */
function workerHandlers(
  opts: LocalWorkerOptions,
  wiring: LocalWiring,
  at: Pick<ReturnType<typeof connect>, "stores" | "queues" | "consumption"> & { places: DynamoRunningPlaces },
  logOf: ReturnType<typeof lineSinks>,
  metering: (name: WorkerName) => WorkerMetering,
) {
  const { stores, queues, consumption, places } = at;
  const callers = localCallers(stores, opts);
  return {
    profile: createProfileHandler({ ledger: stores.profiles, log: logOf("profile"), metering: metering("profile") }),
    dispatch: localDispatchHandler(opts, places, stores, queues, callers, logOf, metering),
    deadLetters: createDeadLetterHandler({
      jobs: stores.jobs,
      rollouts: stores.rollouts,
      maxReceives: WORKERS.dispatch.retry,
      log: logOf("dispatch"),
    }),
    vote: createVoteHandler({
      voters: opts.panel?.voters ?? opts.voters ?? statisticalVoters,
      ballots: stores.ballots,
      log: logOf("vote"),
      metering: metering("vote"),
    }),
    coordinator: localCoordinatorHandler(opts, wiring, stores, queues, consumption, callers, logOf, metering),
  };
}

/** A queue a worker's poller receives from: the worker it belongs to, its name in logs, its batch and concurrency. */
type QueueToPoll = { worker: WorkerName; label: string; url: string; batchSize: number; maxInvocations: number };

/** The queue's ARN, and how long its poller holds a received batch: the queue's visibility timeout and the worker's. */
async function queueHold(
  sqs: SQSClient,
  url: string,
  name: WorkerName,
): Promise<{ arn: string; hold: { visibilitySeconds: number; forMs: number } }> {
  const attributes = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn", "VisibilityTimeout"] }))
  ).Attributes!;
  const arn = attributes.QueueArn!;
  const hold = {
    visibilitySeconds: Number(attributes.VisibilityTimeout),
    forMs: seconds(WORKERS[name].timeout) * 1000,
  };
  return { arn, hold };
}

/** The dispatch worker's handler: rescues' rollouts sampled at the service's or the callers' policies, stored. */
function localDispatchHandler(
  opts: LocalWorkerOptions,
  places: DynamoRunningPlaces,
  stores: Stores,
  queues: WorkerQueues,
  callers: CallerPolicyRunners,
  logOf: ReturnType<typeof lineSinks>,
  metering: (name: WorkerName) => WorkerMetering,
) {
  return createDispatchHandler({
    ...stores,
    rollouts: opts.onRolloutStored ? tellingStores(stores.rollouts, opts.onRolloutStored) : stores.rollouts,
    runners: rolloutRunners({ service: opts.policies, caller: callers }),
    pools: new CachedPoolStore(stores.pools),
    tasks: opts.tasks,
    fairness: {
      slots: new FullSlotsMemo(places, systemClock),
      clock: systemClock,
      requeue: queues.dispatch.queue,
    },
    maxReceives: WORKERS.dispatch.retry,
    log: logOf("dispatch"),
    metering: metering("dispatch"),
  });
}

/**
 * The coordinator worker's handler: experiments a slice at a time (their dependencies from `prepareExperiment`) and
 * pool evolutions, with reports kept in the wiring's folder when it has one.
 */
function localCoordinatorHandler(
  opts: LocalWorkerOptions,
  wiring: LocalWiring,
  stores: Stores,
  queues: WorkerQueues,
  consumption: ConsumptionMeter,
  callers: CallerPolicyRunners,
  logOf: ReturnType<typeof lineSinks>,
  metering: (name: WorkerName) => WorkerMetering,
) {
  const prepare = opts.prepareExperiment;
  return createCoordinatorHandler({
    experiments: stores.experiments,
    steps: stores.experimentSteps,
    meter: stores.meter,
    clock: systemClock,
    sliceMs: opts.coordinatorSliceMs ?? LOCAL_COORDINATOR_SLICE_MS,
    ...(opts.coordinatorLeaseMs ? { leaseMs: opts.coordinatorLeaseMs } : {}),
    continueOn: queues.coordinator.queue,
    metering: metering("coordinator"),
    prepare: (record) =>
      prepare
        ? prepare(record, { stores, queues, consumption })
        : Promise.reject(new Error("this local stack runs no experiments (no prepareExperiment)")),
    poolEvolution: {
      evolutions: stores.poolEvolutions,
      pools: stores.pools,
      profiles: stores.profiles,
      callers,
      ...(opts.poolProposer ? { proposer: llmPoolProposer(opts.poolProposer.config, opts.poolProposer.apiKey) } : {}),
    },
    ...(wiring.artifactsDir
      ? {
          reports: {
            artifacts: new FolderExperimentArtifacts(wiring.artifactsDir),
            render: renderExperimentReport,
          },
        }
      : {}),
    log: logOf("coordinator"),
  });
}
