import { randomUUID } from "node:crypto";
import { jsonLinesLogger } from "@harness-s/core/observability";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { S3Client } from "@aws-sdk/client-s3";
import type { ConsumptionMeter } from "@harness-s/adapters/metering";
import { NotConfiguredError, type Clock } from "@harness-s/core";
import { type ApiKeyStore, type KeyEventLog, SharedKeyRate, bootstrapAdminKey } from "@harness-s/core/access";
import { spendTellingMeter, tariffOver } from "@harness-s/core/billing";
import { statisticalVoters } from "@harness-s/core/voting";
import { ServedModels, servedOffers, type ServedOffers } from "@harness-s/core/models";
import type { MessageQueue } from "@harness-s/core/messaging";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import {
  DECISION_CACHE_LIMITS,
  DynamoPolicyEndpointStore,
  MemoryDecisionCache,
  S3ExperimentArtifacts,
  SqsQueue,
} from "@harness-s/adapters/stores";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import { dynamoStores } from "@harness-s/adapters/dynamo";
import { deployedOutbound, type AwsConfig } from "../aws-config.ts";
import { builtinEnvironments, embeddedTaskSource } from "../embedded-tasks.ts";
import { panelFromSecrets } from "../panel-config.ts";
import { API_LAMBDA_MAX_BODY_BYTES, SERVED_MODELS } from "../../infra/settings.ts";
import { withApiCaches, type ApiDeps } from "./deps.ts";
import { gatewaySettings } from "./gateway-setup.ts";

/**
 * What the deployment runs experiments on (`GET /v1/models`, `POST /v1/experiments`): the policy
 * endpoint's models (the stacks serve SERVED_MODELS); the embedded suite; a caller's own OpenEnv
 * server once a policy endpoint is configured (its episodes run in the coordinator, its policies at
 * the endpoint). The built-in language-model families are not offered: the deployment runs none of
 * their environment servers (the coordinator refuses them too, NOT_CONFIGURED).
 */
export function deployedOffers(config: Pick<AwsConfig, "policyEndpointUrl">): ServedOffers {
  return servedOffers(ServedModels.parse(SERVED_MODELS), {
    envs: ["embedded"],
    callerEnvironments: config.policyEndpointUrl !== undefined,
  });
}

/**
 * The API Lambda's deps from its parsed config and injected SDK clients: DynamoDB stores behind
 * read caches (the first admin key made first when its hash is configured), the queues it sends
 * to, the voter panel when configured, and the Rank-1 gateway when configured, its episodes in
 * DynamoDB (any container continues any episode).
 *
 * @example
 * const deps = await apiLambdaDeps(awsConfigFromResources(), { doc, sqs }, systemClock);
 */
export async function apiLambdaDeps(
  config: AwsConfig,
  clients: { doc: DynamoDBDocumentClient; sqs: SQSClient; consumption?: ConsumptionMeter },
  clock: Clock,
): Promise<ApiDeps> {
  const { doc, sqs } = clients;
  // With a VoterPanel secret, /v1/route and rescues decide with the panel in this function; the
  // decision cache lives as long as the warm container.
  const panel = panelFromSecrets({ panel: config.voterPanel, keys: config.voterKeys, llmApiKey: config.llmApiKey });
  const queue = (url: string | undefined, name: string): MessageQueue =>
    url
      ? new SqsQueue(sqs, url)
      : { send: () => Promise.reject(new NotConfiguredError(`the ${name} queue is not linked to this function`)) };
  const stores = await withAdminBootstrap(
    dynamoStores(doc, config.tables, { decisionTtlSeconds: 30 * 24 * 3600 }),
    config.bootstrapAdminKeyHash,
    clock,
  );
  const events = jsonLinesLogger({
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
  const gateway = config.gateway
    ? await gatewaySettings({ ...config.gateway, store: stores.gatewayEpisodes })
    : undefined;
  return {
    ...withApiCaches(stores, clock),
    // Each meter write's cost of goods on the log too (the dashboard's spend).
    meter: spendTellingMeter(stores.meter, events, config.priceList),
    // A key's rate across every concurrent environment of this function: tokens leased in blocks from its one bucket.
    rate: new SharedKeyRate(stores.rateBlocks, clock, (line) => process.stderr.write(`${line}\n`)),
    evidence: queue(config.queues.profile, "profile"),
    dispatch: queue(config.queues.dispatch, "dispatch"),
    coordinator: queue(config.queues.coordinator, "coordinator"),
    tasks: embeddedTaskSource(),
    voters: panel?.voters ?? statisticalVoters,
    ...(panel ? { panel, decisionCache: new MemoryDecisionCache(clock, DECISION_CACHE_LIMITS) } : {}),
    prober: new HttpEndpointProber(deployedOutbound(config), clock),
    callers: new CallerPolicyRunners({
      endpoints: new DynamoPolicyEndpointStore(doc, config.tables),
      outbound: deployedOutbound(config),
      clock,
      builtin: builtinEnvironments(),
    }),
    prices: tariffOver(config.priceList),
    priceList: config.priceList,
    offers: deployedOffers(config),
    ...(clients.consumption ? { consumption: { meter: clients.consumption, memoryGb: config.memoryGb } } : {}),
    clock,
    newId: (kind = "dec") => `${kind}_${randomUUID()}`,
    // One JSON line per request (correlation id, key id, route, status, ms, code) to the function's log.
    observability: { events },
    maxBodyBytes: API_LAMBDA_MAX_BODY_BYTES,
    // Finished runs' reports and plots, read from the bucket the coordinator writes (ReportsRead).
    ...(config.reportBucket ? { artifacts: new S3ExperimentArtifacts(new S3Client({}), config.reportBucket) } : {}),
    ...(gateway ? { gateway } : {}),
  };
}

/**
 * The deployment's first admin key, from the `BootstrapAdminKeyHash` secret (`bootstrapAdminKey`):
 * tried at cold start and, until it has succeeded, again before each key lookup, so the
 * bootstrap secret works from the first request that presents it. A failure (DynamoDB throttled
 * or unreachable) is logged, never thrown: the cold start and every request go on (a request
 * presenting the bootstrap secret meanwhile is a 401). Once it succeeded this container asks no
 * more; containers starting at once make the key once (its id is fixed, saved only if absent).
 * No hash: the stores as they are.
 */
export async function withAdminBootstrap<S extends { keys: ApiKeyStore; keyEvents: KeyEventLog }>(
  stores: S,
  hash: string | undefined,
  clock: Clock,
  log: (line: string) => void = (line) => console.error(line),
): Promise<S> {
  if (hash === undefined) return stores;
  const { keys, keyEvents } = stores;
  let attempt: Promise<void> | undefined;
  // The bootstrap reads and writes the undecorated store (the decorated one waits on it).
  const ensure = () =>
    (attempt ??= bootstrapAdminKey(hash, { keys, events: keyEvents, clock }).then(
      (outcome) => {
        if (outcome === "created")
          log("made the deployment's first admin key (id bootstrap-admin) from the BootstrapAdminKeyHash secret");
      },
      (err: unknown) => {
        attempt = undefined;
        log(
          `the first admin key (BootstrapAdminKeyHash) could not be made yet; tried again before the next key lookup: ${err instanceof Error ? err.message : String(err)}`,
        );
      },
    ));
  await ensure();
  const bootstrapped: ApiKeyStore = {
    put: (key) => keys.put(key),
    findByHash: async (h) => {
      await ensure();
      return keys.findByHash(h);
    },
    get: (id) => keys.get(id),
    list: () => keys.list(),
    save: (account, expected) => keys.save(account, expected),
  };
  return { ...stores, keys: bootstrapped };
}
