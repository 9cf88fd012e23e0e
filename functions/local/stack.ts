import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { PriceList, tariffOver } from "@harness-s/core/billing";
import { statisticalVoters } from "@harness-s/core/voting";
import type { ServedOffers } from "@harness-s/core/models";
import { systemClock } from "@harness-s/core";
import { LocalRescueProgress } from "@harness-s/core/rescue";
import { teeLogger, type EventLogger } from "@harness-s/core/observability";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { ConsumptionMeter, instrumentSqs } from "@harness-s/adapters/metering";
import {
  DECISION_CACHE_LIMITS,
  FolderExperimentArtifacts,
  MemoryDecisionCache,
  createQueueWithDlq,
} from "@harness-s/adapters/stores";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import { createTables, tableNames, type TableNames } from "@harness-s/adapters/dynamo";
import { localCredentials, startDynamoDbLocal } from "@harness-s/adapters/local";
import { withApiCaches, type ApiDeps } from "../api/deps.ts";
import { API_LAMBDA_MAX_BODY_BYTES, API_MEMORY, WORKERS, memoryGb } from "../../infra/settings.ts";
import { OVERHEAD_KEY } from "../worker-metering.ts";
import { startFairFauxqs } from "./fair-queues.ts";
import { ServeMetrics } from "./metrics.ts";
import { startFauxqsThread } from "./fauxqs-thread.ts";
import { startWorkersThread, type WorkersThreadSpec } from "./workers-thread.ts";
import { startWorkerProcesses, type WorkerProcesses } from "./worker-processes.ts";
import {
  connect,
  localOutbound,
  seconds,
  startLocalWorkers,
  type LocalWiring,
  type LocalWorkerOptions,
  type Stores,
  type WorkerName,
  type WorkerQueues,
} from "./workers.ts";

export { LOCAL_COORDINATOR_SLICE_MS, type Stores, type WorkerName } from "./workers.ts";

export interface LocalStack {
  deps: ApiDeps;
  /** The workers run as processes of their own (`workersOn.processes`): their pids, restarts and stop. */
  processes?: WorkerProcesses;
  stores: Stores;
  dynamoEndpoint: string;
  /** This stack's table names (their prefix is its own when it shares a DynamoDB Local). */
  tables: TableNames;
  sqsEndpoint: string;
  queues: WorkerQueues;
  stop: () => Promise<void>;
}

export interface LocalStackOptions extends Omit<LocalWorkerOptions, "policies"> {
  /** The policies dispatch samples from; needed unless the workers run on their own thread (`workersOn`). */
  policies?: LocalWorkerOptions["policies"];
  /**
   * A DynamoDB Local already running (a test run's shared one): the stack creates its tables there
   * under a prefix of its own instead of starting a JVM, and leaves the server running on stop.
   */
  dynamoEndpoint?: string;
  /**
   * An SQS endpoint already running (a test's own, behind a counter): the stack creates its queues there and leaves it
   * running on stop.
   */
  sqsEndpoint?: string;
  /** Shorter visibility timeouts than the deployed ones (tests that wait for retries and the DLQ). */
  visibilitySeconds?: Partial<Record<WorkerName, number>>;
  /**
   * Run the workers on a thread of their own, built there by this entry from its data (the
   * worker options given here then serve the API only: its tasks and panel): experiments train
   * and roll out off the event loop of a process that also serves the API (`harness-s serve`).
   */
  workersOn?: WorkersThreadSpec;
  /**
   * Where finished runs' reports and plots are kept (`<dir>/<experiment id>/`); default a folder of the stack's own
   * under the OS temp dir, removed at stop.
   */
  artifactsDir?: string;
  /**
   * What experiments may run on (the environments and models this stack's workers run); none: the embedded suite with
   * its own policy.
   */
  offers?: ServedOffers;
  /** Serve `GET /metrics` (admin keys) from this stack's events and queues (`harness-s serve`). */
  metrics?: boolean;
  /** The served models' policy workers, whose tokens sampled `/metrics` reads at each scrape. */
  policyWorkers?: readonly { name: string; url: string }[];
}

/**
 * DynamoDB Local and fauxqs on free loopback ports, the tables and queues (with DLQs) created
 * from the same definitions the stacks use, and the workers' pollers ({@link startLocalWorkers})
 * with the visibility timeouts and receives before the DLQ of the deployed queues
 * (`infra/settings.ts`), here or on a thread of their own (`workersOn`).
 */
export async function startLocalStack(opts: LocalStackOptions): Promise<LocalStack> {
  const log = opts.log ?? (() => undefined);
  const shared = opts.dynamoEndpoint;
  const [dynamo, fauxqs] = await Promise.all([
    shared ? { endpoint: shared, stop: async () => {} } : startDynamoDbLocal(),
    // With the workers on a thread of their own, the queue server gets one too: their traffic stays off the API's
    // thread.
    opts.sqsEndpoint ? { port: 0, stop: async () => {} } : opts.workersOn ? startFauxqsThread() : startFairFauxqs(),
  ]);
  const ddb = new DynamoDBClient({ endpoint: dynamo.endpoint, region: "us-east-1", credentials: localCredentials });
  const sqsEndpoint = opts.sqsEndpoint ?? `http://127.0.0.1:${fauxqs.port}`;
  const sqs = new SQSClient({ endpoint: sqsEndpoint, region: "us-east-1", credentials: localCredentials });
  // Every SQS request of the stack is metered, its set-up too (the queue server's count and the meters' agree).
  const consumption = new ConsumptionMeter();
  instrumentSqs(sqs, consumption);
  let workers: { stop: () => Promise<void>; processes?: WorkerProcesses } | undefined;
  let clients: ReturnType<typeof connect> | undefined;
  const reports = await reportsFolder(opts.artifactsDir);
  const stop = async () => {
    await workers?.stop();
    const loose = consumption.takeUnattributed();
    if (clients && Object.keys(loose).length)
      await clients.stores.meter.add(OVERHEAD_KEY, loose).catch((err) => log(`metering at stop: ${String(err)}`));
    clients?.ddb.destroy();
    clients?.sqs.destroy();
    ddb.destroy();
    sqs.destroy();
    await fauxqs.stop();
    await dynamo.stop();
    await reports.remove();
  };
  try {
    const names = tableNames(shared ? `local-${randomUUID().slice(0, 8)}-` : "local-");
    await createTables(ddb, names);
    const make = (name: WorkerName) =>
      createQueueWithDlq(sqs, name, {
        maxReceiveCount: WORKERS[name].retry,
        visibilityTimeoutSeconds: opts.visibilitySeconds?.[name] ?? seconds(WORKERS[name].visibility),
      });
    const wiring: LocalWiring = {
      dynamoEndpoint: dynamo.endpoint,
      sqsEndpoint,
      tables: names,
      queues: {
        profile: await make("profile"),
        dispatch: await make("dispatch"),
        vote: await make("vote"),
        coordinator: await make("coordinator"),
      },
      artifactsDir: reports.dir,
    };
    clients = connect(wiring, consumption);
    const { stores, queues } = clients;
    const { events, metrics, progress } = observability(opts, sqs, wiring);
    workers = await startWorkers(
      { ...opts, onRolloutStored: alsoTelling(progress, opts.onRolloutStored) },
      wiring,
      log,
      events,
    );
    const deps = apiDeps(opts, stores, queues, consumption, reports.dir, { events, metrics, progress });
    const processes = workers.processes;
    return {
      deps,
      stores,
      dynamoEndpoint: dynamo.endpoint,
      tables: names,
      sqsEndpoint,
      queues,
      stop,
      ...(processes ? { processes } : {}),
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What the stack's API runs with: its stores and queues, this process's clock and ids, and its observability. */
function apiDeps(
  opts: LocalStackOptions,
  stores: Stores,
  queues: WorkerQueues,
  consumption: ConsumptionMeter,
  reportsDir: string,
  { events, metrics, progress }: ReturnType<typeof observability>,
): ApiDeps {
  return {
    ...withApiCaches(stores, systemClock),
    evidence: queues.profile.queue,
    dispatch: queues.dispatch.queue,
    progress,
    coordinator: queues.coordinator.queue,
    prober: new HttpEndpointProber(localOutbound(opts), systemClock),
    // The API checks a rescue's environment and serves its token rows: the built-in environments the workers run are
    // named here too.
    callers: new CallerPolicyRunners({
      endpoints: stores.endpoints,
      outbound: localOutbound(opts),
      clock: systemClock,
      ...(opts.builtinEnvironments ? { builtin: opts.builtinEnvironments } : {}),
    }),
    prices: tariffOver(PriceList.parse({})),
    priceList: PriceList.parse({}),
    consumption: { meter: consumption, memoryGb: memoryGb(API_MEMORY) },
    tasks: opts.tasks,
    voters: opts.panel?.voters ?? statisticalVoters,
    ...(opts.panel ? { panel: opts.panel } : {}),
    // A panel's LLM voters cost tokens: identical requests of a key within a pool and profile version are served
    // again for a minute.
    ...(opts.panel ? { decisionCache: new MemoryDecisionCache(systemClock, DECISION_CACHE_LIMITS) } : {}),
    clock: systemClock,
    newId: (kind = "dec") => `${kind}_${randomUUID()}`,
    maxBodyBytes: API_LAMBDA_MAX_BODY_BYTES,
    artifacts: new FolderExperimentArtifacts(reportsDir),
    ...(opts.offers ? { offers: opts.offers } : {}),
    ...(events ? { observability: { events, ...(metrics ? { metrics } : {}) } } : {}),
  };
}

/** Each rollout the workers store told to the rescues' progress (a status read waiting on it), and to `also`. */
const alsoTelling =
  (progress: LocalRescueProgress, also?: (jobId: string, index: number) => void) => (jobId: string, index: number) => {
    progress.stored(jobId, index);
    also?.(jobId, index);
  };

/** The stack's workers: here with `policies`, or on a thread of their own (`workersOn`); their events to `events`. */
async function startWorkers(
  opts: LocalStackOptions,
  wiring: LocalWiring,
  log: (line: string) => void,
  events: EventLogger | undefined,
) {
  if (opts.workersOn?.processes) {
    const { processes, data } = opts.workersOn;
    const thread = await startWorkersThread(opts.workersOn, wiring, log, events, opts.onRolloutStored);
    const children = await startWorkerProcesses({ ...processes, data }, wiring, log, opts.onRolloutStored).catch(
      async (err: unknown) => {
        await thread.stop();
        throw err;
      },
    );
    return {
      processes: children,
      stop: async () => {
        await children.stop();
        await thread.stop();
      },
    };
  }
  if (opts.workersOn) return startWorkersThread(opts.workersOn, wiring, log, events, opts.onRolloutStored);
  if (opts.policies)
    return startLocalWorkers(wiring, { ...opts, policies: opts.policies, ...(events ? { logger: events } : {}) });
  throw new Error("a local stack runs its workers here with `policies`, or on a thread of their own with `workersOn`");
}

/**
 * Where a stack's events go: `logger` (without one, the workers' failed records are text lines to
 * `log`, as before); with `metrics`, also into the metrics `/metrics` serves (each queue and its
 * DLQ's depth read at each scrape); and the rescues' progress the workers tell the API of.
 */
function observability(
  opts: Pick<LocalStackOptions, "logger" | "metrics" | "policyWorkers">,
  sqs: SQSClient,
  wiring: LocalWiring,
) {
  const queues = Object.entries(wiring.queues).flatMap(([name, q]) => [
    { name, url: q.url },
    { name: `${name}-dlq`, url: q.dlqUrl },
  ]);
  const metrics = opts.metrics ? new ServeMetrics(sqs, queues, opts.policyWorkers) : undefined;
  const events: EventLogger | undefined =
    opts.logger && metrics ? teeLogger(opts.logger, metrics) : (opts.logger ?? metrics);
  // The workers tell the API's waiting status reads each rollout they store (here or across threads): a `?wait` answers
  // at once.
  return { events, metrics, progress: new LocalRescueProgress() };
}

/**
 * Where a stack keeps finished runs' reports: `given`, or a folder of its own under the OS temp dir that `remove`
 * deletes (it lives as long as the stack's tables: DynamoDB Local keeps them in memory).
 */
async function reportsFolder(given: string | undefined): Promise<{ dir: string; remove: () => Promise<void> }> {
  if (given) return { dir: given, remove: async () => {} };
  const dir = await mkdtemp(join(tmpdir(), "harness-s-reports-"));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
