import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { handle } from "hono/aws-lambda";
import { NotConfiguredError, statisticalVoters, systemClock } from "@harness-s/core";
import { SqsQueue, dynamoStores } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { createApp } from "./app.ts";

// Composition root of the `api` Lambda: config parsed once, SDK clients injected into adapters.
const config = awsConfigFromResources();
const RESCUES_NOT_DEPLOYED = "elastic rescues need the dispatch worker and a policy endpoint, which this deployment does not have yet";
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const app = createApp({
  ...dynamoStores(doc, config.tables, { decisionTtlSeconds: 30 * 24 * 3600 }),
  evidence: new SqsQueue(new SQSClient({}), config.profileQueueUrl ?? ""),
  // The dispatch worker and the policy endpoint client are not deployed yet (issue 3).
  tasks: { get: () => Promise.reject(new NotConfiguredError(RESCUES_NOT_DEPLOYED)) },
  dispatch: { send: () => Promise.reject(new NotConfiguredError(RESCUES_NOT_DEPLOYED)) },
  voters: statisticalVoters,
  clock: systemClock,
  newId: () => `dec_${randomUUID()}`,
  maxBodyBytes: 256 * 1024,
});

export const handler = handle(app);
