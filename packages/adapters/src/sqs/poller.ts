import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { SqsBatchResponse, SqsEvent } from "./event.ts";

/**
 * One poll of the local runtime: receives up to `batchSize` messages and invokes the *same*
 * Lambda handler with a real SQS event shape; deletes what succeeded and leaves reported
 * failures to reappear after the visibility timeout (and reach the DLQ at maxReceiveCount).
 * A handler that throws fails the whole batch, as Lambda does. With `hold`, the batch is kept
 * invisible while its handler runs, up to `hold.forMs` (the deployed function's timeout): in the
 * cloud a function's timeout below the queue's visibility keeps a running batch from being
 * delivered twice; a local queue with a visibility shorter than a handler's run (tests that want
 * fast retries) keeps that guarantee this way, and a handler that outlives the timeout is let go.
 */
export async function pollOnce(
  sqs: SQSClient,
  queue: { url: string; arn: string },
  handler: (event: SqsEvent) => Promise<SqsBatchResponse>,
  opts: { batchSize: number; waitSeconds?: number; hold?: { visibilitySeconds: number; forMs: number } },
): Promise<{ received: number; failed: number }> {
  const out = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: opts.batchSize, WaitTimeSeconds: opts.waitSeconds ?? 0, MessageSystemAttributeNames: ["All"] }),
  );
  const messages = out.Messages ?? [];
  if (messages.length === 0) return { received: 0, failed: 0 };
  const event: SqsEvent = {
    Records: messages.map((m) => ({
      messageId: m.MessageId!,
      receiptHandle: m.ReceiptHandle!,
      body: m.Body ?? "",
      attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1", SentTimestamp: m.Attributes?.SentTimestamp ?? "0" },
      messageAttributes: {},
      md5OfBody: m.MD5OfBody ?? "",
      eventSource: "aws:sqs",
      eventSourceARN: queue.arn,
      awsRegion: "us-east-1",
    })),
  };
  let failedIds: Set<string>;
  const release = opts.hold ? holdInvisible(sqs, queue.url, messages, opts.hold) : () => undefined;
  try {
    const response = await handler(event);
    failedIds = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  } catch {
    failedIds = new Set(messages.map((m) => m.MessageId!));
  } finally {
    release();
  }
  const done = messages.filter((m) => !failedIds.has(m.MessageId!));
  if (done.length) {
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queue.url, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
  }
  return { received: messages.length, failed: failedIds.size };
}

/** Extends the messages' visibility every half visibility timeout until released or `forMs` has passed. */
function holdInvisible(sqs: SQSClient, url: string, messages: readonly { ReceiptHandle?: string }[], hold: { visibilitySeconds: number; forMs: number }): () => void {
  const until = Date.now() + hold.forMs;
  const entries = messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: hold.visibilitySeconds }));
  const timer = setInterval(() => {
    if (Date.now() > until) return clearInterval(timer);
    sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: entries })).catch(() => undefined);
  }, hold.visibilitySeconds * 500);
  return () => clearInterval(timer);
}
