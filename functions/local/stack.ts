import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startFauxqs } from "fauxqs";
import { Prices, statisticalVoters, systemClock, type ExperimentDeps, type ExperimentRecord, type PolicyEndpoints, type TaskSource, type Voter } from "@harness-s/core";
import {
  CachedPoolStore,
  DECISION_CACHE_LIMITS,
  MemoryDecisionCache,
  SqsQueue,
  createQueueWithDlq,
  createTables,
  dynamoStores,
  localCredentials,
  pollOnce,
  startDynamoDbLocal,
  tableNames,
  type PanelRouting,
  type TableNames,
} from "@harness-s/adapters";
import { withApiCaches, type ApiDeps } from "../api/deps.ts";
import { createCoordinatorHandler } from "../coordinator/handler.ts";
import { createDispatchHandler } from "../dispatch/handler.ts";
import { createProfileHandler } from "../profile/handler.ts";
import { createVoteHandler } from "../vote/handler.ts";
import { WORKERS } from "../../stacks/workers.ts";

export type WorkerName = keyof typeof WORKERS;

/** How long a local coordinator attempt runs before it re-queues its run (the Lambda's is COORDINATOR_SLICE_MS). */
export const LOCAL_COORDINATOR_SLICE_MS = 10_000;

/** "6 minutes" / "30 seconds" → seconds. */
function seconds(duration: string): number {
  const [n, unit] = duration.split(" ");
  return Number(n) * (unit!.startsWith("minute") ? 60 : 1);
}
export type Stores = ReturnType<typeof dynamoStores>;

export interface LocalStack {
  deps: ApiDeps;
  stores: Stores;
  dynamoEndpoint: string;
  /** This stack's table names (their prefix is its own when it shares a DynamoDB Local). */
  tables: TableNames;
  sqsEndpoint: string;
  queues: Record<WorkerName, { url: string; dlqUrl: string; queue: SqsQueue }>;
  stop: () => Promise<void>;
}

export interface LocalStackOptions {
  tasks: TaskSource;
  /** The policies dispatch samples from (the GPU endpoint in the cloud). */
  policies: PolicyEndpoints;
  /** Voters the vote worker runs (default: the statistical voters). */
  voters?: readonly Voter[];
  /** A voter panel (`votersFromPanel`): its voters decide `/v1/route` and run in the vote worker. */
  panel?: PanelRouting;
  /** How the coordinator builds a run's dependencies; without it, experiments fail with a clear error. */
  prepareExperiment?: (record: ExperimentRecord, stack: { stores: Stores; queues: LocalStack["queues"] }) => Promise<ExperimentDeps>;
  /**
   * A DynamoDB Local already running (a test run's shared one): the stack creates its tables there
   * under a prefix of its own instead of starting a JVM, and leaves the server running on stop.
   */
  dynamoEndpoint?: string;
  /** Concurrent pollers of the dispatch queue (Lambda's concurrency, locally). */
  dispatchConcurrency?: number;
  /**
   * A coordinator attempt re-queues its run after this long, as the Lambda does, so that runs
   * (and keys) take turns on the coordinator instead of waiting for the first to finish.
   */
  coordinatorSliceMs?: number;
  /** Shorter visibility timeouts than the deployed ones (tests that wait for retries and the DLQ). */
  visibilitySeconds?: Partial<Record<WorkerName, number>>;
  log?: (line: string) => void;
}

/**
 * DynamoDB Local and fauxqs on free loopback ports, the tables and queues (with DLQs) created
 * from the same definitions the stacks use, and pollers that invoke the `profile`, `dispatch`,
 * `vote` and `coordinator` Lambda handlers with real SQS event shapes, with the batch sizes,
 * visibility timeouts and receives before the DLQ of the deployed queues (`stacks/workers.ts`).
 */
export async function startLocalStack(opts: LocalStackOptions): Promise<LocalStack> {
  const log = opts.log ?? (() => undefined);
  const shared = opts.dynamoEndpoint;
  const [dynamo, fauxqs] = await Promise.all([
    shared ? { endpoint: shared, stop: async () => {} } : startDynamoDbLocal(),
    startFauxqs({ port: 0, host: "127.0.0.1", logger: false }),
  ]);
  const ddb = new DynamoDBClient({ endpoint: dynamo.endpoint, region: "us-east-1", credentials: localCredentials });
  const sqsEndpoint = `http://127.0.0.1:${fauxqs.port}`;
  const sqs = new SQSClient({ endpoint: sqsEndpoint, region: "us-east-1", credentials: localCredentials });
  let running = true;
  const pollers: Promise<void>[] = [];
  const stop = async () => {
    running = false;
    await Promise.all(pollers);
    ddb.destroy();
    sqs.destroy();
    await fauxqs.stop();
    await dynamo.stop();
  };
  try {
    const names = tableNames(shared ? `local-${randomUUID().slice(0, 8)}-` : "local-");
    await createTables(ddb, names);
    const doc = DynamoDBDocumentClient.from(ddb);
    const stores = dynamoStores(doc, names, { decisionTtlSeconds: 7 * 24 * 3600 });
    const make = async (name: WorkerName) => {
      const q = await createQueueWithDlq(sqs, name, {
        maxReceiveCount: WORKERS[name].retry,
        visibilityTimeoutSeconds: opts.visibilitySeconds?.[name] ?? seconds(WORKERS[name].visibility),
      });
      return { ...q, queue: new SqsQueue(sqs, q.url) };
    };
    const queues = { profile: await make("profile"), dispatch: await make("dispatch"), vote: await make("vote"), coordinator: await make("coordinator") };
    const prepare = opts.prepareExperiment;
    await startWorker("profile", queues.profile.url, createProfileHandler({ ledger: stores.profiles, log }));
    const dispatch = createDispatchHandler({
      ...stores,
      pools: new CachedPoolStore(stores.pools),
      tasks: opts.tasks,
      policies: opts.policies,
      maxReceives: WORKERS.dispatch.retry,
      log,
    });
    for (let i = 0; i < (opts.dispatchConcurrency ?? 4); i++) await startWorker("dispatch", queues.dispatch.url, dispatch);
    await startWorker("vote", queues.vote.url, createVoteHandler({ voters: opts.panel?.voters ?? opts.voters ?? statisticalVoters, ballots: stores.ballots, log }));
    await startWorker(
      "coordinator",
      queues.coordinator.url,
      createCoordinatorHandler({
        experiments: stores.experiments,
        steps: stores.experimentSteps,
        meter: stores.meter,
        clock: systemClock,
        sliceMs: opts.coordinatorSliceMs ?? LOCAL_COORDINATOR_SLICE_MS,
        continueOn: queues.coordinator.queue,
        prepare: (record) => (prepare ? prepare(record, { stores, queues }) : Promise.reject(new Error("this local stack runs no experiments (no prepareExperiment)"))),
        log,
      }),
    );
    const deps: ApiDeps = {
      ...withApiCaches(stores, systemClock),
      evidence: queues.profile.queue,
      dispatch: queues.dispatch.queue,
      coordinator: queues.coordinator.queue,
      prices: Prices.parse({}),
      tasks: opts.tasks,
      voters: opts.panel?.voters ?? statisticalVoters,
      ...(opts.panel ? { panel: opts.panel } : {}),
      // A panel's LLM voters cost tokens: identical requests within a pool and profile version are served again for a minute.
      ...(opts.panel ? { decisionCache: new MemoryDecisionCache(systemClock, DECISION_CACHE_LIMITS) } : {}),
      clock: systemClock,
      newId: (kind = "dec") => `${kind}_${randomUUID()}`,
      maxBodyBytes: 256 * 1024,
    };
    return { deps, stores, dynamoEndpoint: dynamo.endpoint, tables: names, sqsEndpoint, queues, stop };
  } catch (err) {
    await stop();
    throw err;
  }

  /** A poller invoking `handler` with the worker's batch size, until the stack stops. */
  async function startWorker(name: WorkerName, url: string, handler: Parameters<typeof pollOnce>[2]) {
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
    pollers.push(
      (async () => {
        while (running) {
          try {
            await pollOnce(sqs, { url, arn }, handler, { batchSize: WORKERS[name].batch, waitSeconds: 1 });
          } catch (err) {
            if (running) log(`${name} poller: ${err instanceof Error ? err.message : String(err)}`);
          }
        }
      })(),
    );
  }
}
