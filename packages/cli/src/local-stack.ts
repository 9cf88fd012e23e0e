import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startFauxqs } from "fauxqs";
import { statisticalVoters, systemClock, type RolloutRunner, type TaskSource } from "@harness-s/core";
import {
  SqsQueue,
  createQueueWithDlq,
  createTables,
  dynamoStores,
  localCredentials,
  pollOnce,
  startDynamoDbLocal,
  tableNames,
} from "@harness-s/adapters";
import type { ApiDeps } from "../../../functions/api/deps.ts";
import { createDispatchHandler } from "../../../functions/dispatch/handler.ts";
import { createProfileHandler } from "../../../functions/profile/handler.ts";

export interface LocalStack {
  deps: ApiDeps;
  dynamoEndpoint: string;
  sqsEndpoint: string;
  queues: Record<"profile" | "dispatch", { url: string; dlqUrl: string }>;
  stop: () => Promise<void>;
}

/**
 * DynamoDB Local and fauxqs on free loopback ports, the tables and queues (with DLQs) created
 * from the same definitions the stacks use, and pollers that invoke the `profile` and `dispatch`
 * Lambda handlers with real SQS event shapes (batch size 10, visibility 5 s, 3 receives then DLQ).
 */
export async function startLocalStack(opts: { tasks: TaskSource; runRollout: RolloutRunner; log?: (line: string) => void }): Promise<LocalStack> {
  const log = opts.log ?? (() => undefined);
  const [dynamo, fauxqs] = await Promise.all([startDynamoDbLocal(), startFauxqs({ port: 0, host: "127.0.0.1", logger: false })]);
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
    const names = tableNames("local-");
    await createTables(ddb, names);
    const doc = DynamoDBDocumentClient.from(ddb);
    const stores = dynamoStores(doc, names, { decisionTtlSeconds: 7 * 24 * 3600 });
    const profile = await startWorker(sqs, "profile", createProfileHandler({ ledger: stores.profiles, log }));
    const dispatch = await startWorker(sqs, "dispatch", createDispatchHandler({ ...stores, tasks: opts.tasks, runRollout: opts.runRollout, log }));
    const deps: ApiDeps = {
      ...stores,
      evidence: new SqsQueue(sqs, profile.url),
      dispatch: new SqsQueue(sqs, dispatch.url),
      tasks: opts.tasks,
      voters: statisticalVoters,
      clock: systemClock,
      newId: () => `dec_${randomUUID()}`,
      maxBodyBytes: 256 * 1024,
    };
    return { deps, dynamoEndpoint: dynamo.endpoint, sqsEndpoint, queues: { profile, dispatch }, stop };
  } catch (err) {
    await stop();
    throw err;
  }

  /** A queue with its DLQ and a poller invoking `handler` (batch 10, visibility 5 s, 3 receives). */
  async function startWorker(client: SQSClient, name: string, handler: Parameters<typeof pollOnce>[2]) {
    const q = await createQueueWithDlq(client, name, { maxReceiveCount: 3, visibilityTimeoutSeconds: 5 });
    const arn = (await client.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ["QueueArn"] }))).Attributes!.QueueArn!;
    pollers.push(
      (async () => {
        while (running) {
          try {
            await pollOnce(client, { url: q.url, arn }, handler, { batchSize: 10, waitSeconds: 1 });
          } catch (err) {
            if (running) log(`${name} poller: ${err instanceof Error ? err.message : String(err)}`);
          }
        }
      })(),
    );
    return q;
  }
}
