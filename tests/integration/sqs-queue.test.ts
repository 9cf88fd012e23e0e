import { afterAll, beforeAll } from "vitest";
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startFauxqs } from "fauxqs";
import { Envelope } from "@harness-s/core/messaging";
import { SqsQueue, createQueueWithDlq } from "@harness-s/adapters/stores";
import { localCredentials } from "@harness-s/adapters/local";
import { queueContract } from "../contract/queue.contract.ts";

let fauxqs: Awaited<ReturnType<typeof startFauxqs>>;
let sqs: SQSClient;
let n = 0;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  sqs = new SQSClient({
    endpoint: `http://127.0.0.1:${fauxqs.port}`,
    region: "us-east-1",
    credentials: localCredentials,
  });
});
afterAll(async () => {
  sqs?.destroy();
  await fauxqs?.stop();
});

queueContract("SQS (fauxqs)", async () => {
  const { url } = await createQueueWithDlq(sqs, `contract-${++n}`, {
    maxReceiveCount: 3,
    visibilityTimeoutSeconds: 30,
  });
  return {
    queue: new SqsQueue(sqs, url),
    receiveAll: async (expected) => {
      const got: Envelope[] = [];
      const deadline = Date.now() + 2000;
      while (got.length < expected || Date.now() < deadline) {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: got.length < expected ? 1 : 0,
          }),
        );
        const messages = out.Messages ?? [];
        if (messages.length === 0 && got.length >= expected) break;
        got.push(...messages.map((m) => Envelope.parse(JSON.parse(m.Body!))));
        if (messages.length)
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: url,
              Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
      }
      return got;
    },
  };
});
