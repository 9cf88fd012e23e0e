import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { handle } from "hono/aws-lambda";
import { NotConfiguredError, Prices, statisticalVoters, systemClock, type MessageQueue } from "@harness-s/core";
import { CallerPolicyRunners, DECISION_CACHE_LIMITS, DynamoPolicyEndpointStore, HttpEndpointProber, MemoryDecisionCache, SqsQueue, dynamoStores } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { embeddedTaskSource } from "../embedded-tasks.ts";
import { panelFromSecrets } from "../panel-config.ts";
import { createApp } from "./app.ts";
import { withApiCaches } from "./deps.ts";

// Composition root of the `api` Lambda: config parsed once, SDK clients injected into adapters.
const config = awsConfigFromResources();
// With a VoterPanel secret, /v1/route and rescues decide with the panel in this function; the
// decision cache lives as long as the warm container.
const panel = panelFromSecrets({ panel: config.voterPanel, keys: config.voterKeys, llmApiKey: config.llmApiKey });
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const sqs = new SQSClient({});
const queue = (url: string | undefined, name: string): MessageQueue =>
  url ? new SqsQueue(sqs, url) : { send: () => Promise.reject(new NotConfiguredError(`the ${name} queue is not linked to this function`)) };
const app = createApp({
  ...withApiCaches(dynamoStores(doc, config.tables, { decisionTtlSeconds: 30 * 24 * 3600 }), systemClock),
  evidence: queue(config.queues.profile, "profile"),
  dispatch: queue(config.queues.dispatch, "dispatch"),
  coordinator: queue(config.queues.coordinator, "coordinator"),
  tasks: embeddedTaskSource(),
  voters: panel?.voters ?? statisticalVoters,
  ...(panel ? { panel, decisionCache: new MemoryDecisionCache(systemClock, DECISION_CACHE_LIMITS) } : {}),
  // A deployed API reaches only public endpoints: loopback is never allowed here.
  prober: new HttpEndpointProber({ allowLoopback: false }, systemClock),
  callers: new CallerPolicyRunners({ endpoints: new DynamoPolicyEndpointStore(doc, config.tables), outbound: { allowLoopback: false }, clock: systemClock }),
  prices: Prices.parse({}),
  clock: systemClock,
  newId: (kind = "dec") => `${kind}_${randomUUID()}`,
  maxBodyBytes: 256 * 1024,
});

export const handler = handle(app);
