import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from "@aws-sdk/client-sqs";
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
  handler: Handler,
  opts: PollOptions,
): Promise<{ received: number; failed: number }> {
  const messages = await receive(sqs, queue.url, opts);
  if (messages.length === 0) return { received: 0, failed: 0 };
  return invoke(sqs, queue, messages, handler, opts.hold);
}

export interface PollOptions {
  batchSize: number;
  waitSeconds?: number;
  hold?: { visibilitySeconds: number; forMs: number };
}

type Handler = (event: SqsEvent) => Promise<SqsBatchResponse>;

/**
 * Lambda's SQS event source as it scales out: one receive at a time while fewer than
 * `maxInvocations` batches are being handled, each batch handed to `handler` as it arrives without
 * waiting for the ones before it, until `running()` is false; then it waits for the batches in
 * hand. A batch whose handler is slow (a caller's endpoint that never answers) holds one
 * invocation, not the queue.
 *
 * @example
 * await pollElastic(sqs, { url, arn }, handler, { batchSize: 10, waitSeconds: 1, maxInvocations: 64, running: () => !stopped });
 */
export async function pollElastic(
  sqs: SQSClient,
  queue: { url: string; arn: string },
  handler: Handler,
  opts: PollOptions & { maxInvocations: number; running: () => boolean; onError?: (err: unknown) => void },
): Promise<void> {
  const inHand = new Set<Promise<unknown>>();
  while (opts.running()) {
    if (inHand.size >= opts.maxInvocations) {
      await Promise.race(inHand);
      continue;
    }
    try {
      const messages = await receive(sqs, queue.url, opts);
      if (messages.length === 0) continue;
      const batch: Promise<unknown> = invoke(sqs, queue, messages, handler, opts.hold)
        .catch((err: unknown) => opts.onError?.(err))
        .finally(() => inHand.delete(batch));
      inHand.add(batch);
    } catch (err) {
      opts.onError?.(err);
    }
  }
  await Promise.all(inHand);
}

async function receive(sqs: SQSClient, url: string, opts: PollOptions) {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: opts.batchSize,
      WaitTimeSeconds: opts.waitSeconds ?? 0,
      MessageSystemAttributeNames: ["All"],
    }),
  );
  return out.Messages ?? [];
}

/** One invocation: the batch as a real SQS event, what succeeded deleted, reported failures left to reappear. */
async function invoke(
  sqs: SQSClient,
  queue: { url: string; arn: string },
  messages: Message[],
  handler: Handler,
  hold: PollOptions["hold"],
) {
  const event: SqsEvent = {
    Records: messages.map((m) => ({
      messageId: m.MessageId!,
      receiptHandle: m.ReceiptHandle!,
      body: m.Body ?? "",
      attributes: {
        ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1",
        SentTimestamp: m.Attributes?.SentTimestamp ?? "0",
      },
      messageAttributes: {},
      md5OfBody: m.MD5OfBody ?? "",
      eventSource: "aws:sqs",
      eventSourceARN: queue.arn,
      awsRegion: "us-east-1",
    })),
  };
  let failedIds: Set<string>;
  const release = hold ? holdInvisible(sqs, queue.url, messages, hold) : () => undefined;
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
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return { received: messages.length, failed: failedIds.size };
}

/** Extends the messages' visibility every half visibility timeout until released or `forMs` has passed. */
function holdInvisible(
  sqs: SQSClient,
  url: string,
  messages: readonly { ReceiptHandle?: string }[],
  hold: { visibilitySeconds: number; forMs: number },
): () => void {
  const until = Date.now() + hold.forMs;
  const entries = messages.map((m, i) => ({
    Id: String(i),
    ReceiptHandle: m.ReceiptHandle!,
    VisibilityTimeout: hold.visibilitySeconds,
  }));
  const timer = setInterval(() => {
    if (Date.now() > until) return clearInterval(timer);
    sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: entries })).catch(() => undefined);
  }, hold.visibilitySeconds * 500);
  return () => clearInterval(timer);
}
