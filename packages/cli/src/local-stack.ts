import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startFauxqs } from "fauxqs";
import { statisticalVoters, systemClock } from "@harness-s/core";
import {
  DynamoApiKeyStore,
  DynamoDecisionStore,
  DynamoPoolStore,
  DynamoProfileStore,
  DynamoUsageMeter,
  SqsQueue,
  createQueueWithDlq,
  createTables,
  localCredentials,
  pollOnce,
  startDynamoDbLocal,
  tableNames,
} from "@harness-s/adapters";
import type { ApiDeps } from "../../../functions/api/deps.ts";
import { createProfileHandler } from "../../../functions/profile/handler.ts";

export interface LocalStack {
  deps: ApiDeps;
  dynamoEndpoint: string;
  sqsEndpoint: string;
  queues: { profile: { url: string; dlqUrl: string } };
  stop: () => Promise<void>;
}

/**
 * DynamoDB Local and fauxqs on free loopback ports, the tables and queues (with DLQs) created
 * from the same definitions the stacks use, and a poller that invokes the `profile` Lambda
 * handler with real SQS event shapes (batch size 10, visibility 5 s, 3 receives then the DLQ).
 */
export async function startLocalStack(log: (line: string) => void = () => undefined): Promise<LocalStack> {
  const [dynamo, fauxqs] = await Promise.all([startDynamoDbLocal(), startFauxqs({ port: 0, host: "127.0.0.1", logger: false })]);
  const ddb = new DynamoDBClient({ endpoint: dynamo.endpoint, region: "us-east-1", credentials: localCredentials });
  const sqsEndpoint = `http://127.0.0.1:${fauxqs.port}`;
  const sqs = new SQSClient({ endpoint: sqsEndpoint, region: "us-east-1", credentials: localCredentials });
  let running = true;
  let poller: Promise<void> = Promise.resolve();
  const stop = async () => {
    running = false;
    await poller;
    ddb.destroy();
    sqs.destroy();
    await fauxqs.stop();
    await dynamo.stop();
  };
  try {
    const names = tableNames("local-");
    await createTables(ddb, names);
    const doc = DynamoDBDocumentClient.from(ddb);
    const profile = await createQueueWithDlq(sqs, "profile", { maxReceiveCount: 3, visibilityTimeoutSeconds: 5 });
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: profile.url, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
    const profiles = new DynamoProfileStore(doc, names);
    const handler = createProfileHandler({ ledger: profiles, log });
    poller = (async () => {
      while (running) {
        try {
          await pollOnce(sqs, { url: profile.url, arn }, handler, { batchSize: 10, waitSeconds: 1 });
        } catch (err) {
          if (running) log(`poller: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    })();
    const deps: ApiDeps = {
      pools: new DynamoPoolStore(doc, names),
      profiles,
      decisions: new DynamoDecisionStore(doc, names, 7 * 24 * 3600),
      keys: new DynamoApiKeyStore(doc, names),
      meter: new DynamoUsageMeter(doc, names),
      evidence: new SqsQueue(sqs, profile.url),
      voters: statisticalVoters,
      clock: systemClock,
      newId: () => `dec_${randomUUID()}`,
      maxBodyBytes: 256 * 1024,
    };
    return { deps, dynamoEndpoint: dynamo.endpoint, sqsEndpoint, queues: { profile }, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
