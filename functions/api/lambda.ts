import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { handle } from "hono/aws-lambda";
import { statisticalVoters, systemClock } from "@harness-s/core";
import { DynamoApiKeyStore, DynamoDecisionStore, DynamoPoolStore, DynamoProfileStore, DynamoUsageMeter, SqsQueue } from "@harness-s/adapters";
import { awsConfigFromResources } from "../aws-config.ts";
import { createApp } from "./app.ts";

// Composition root of the `api` Lambda: config parsed once, SDK clients injected into adapters.
const config = awsConfigFromResources();
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const app = createApp({
  pools: new DynamoPoolStore(doc, config.tables),
  profiles: new DynamoProfileStore(doc, config.tables),
  decisions: new DynamoDecisionStore(doc, config.tables, 30 * 24 * 3600),
  keys: new DynamoApiKeyStore(doc, config.tables),
  meter: new DynamoUsageMeter(doc, config.tables),
  evidence: new SqsQueue(new SQSClient({}), config.profileQueueUrl ?? ""),
  voters: statisticalVoters,
  clock: systemClock,
  newId: () => `dec_${randomUUID()}`,
  maxBodyBytes: 256 * 1024,
});

export const handler = handle(app);
