import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { Envelope, type MessageQueue } from "@harness-s/core/messaging";
import { PartialSendError, StoreUnavailableError, ValidationError, formatIssues } from "@harness-s/core";
import { aws } from "../../errors.ts";

/** The most SQS lets a message wait before it is first seen (`DelaySeconds`). */
export const SQS_MAX_DELAY_SECONDS = 900;

/**
 * Sends validated envelopes to one SQS queue (batches of up to 10, as SQS allows). A message with
 * a payer goes with its key as `MessageGroupId`: on a standard queue that makes it an SQS fair
 * queue, where a key with a backlog (many messages in flight) does not hold back another key's
 * messages. A failure after some batches went out is a {@link PartialSendError} naming the
 * envelope ids that were and were not queued; a failure before any went out is the queue's own error.
 */
export class SqsQueue implements MessageQueue {
  constructor(
    private readonly sqs: SQSClient,
    readonly url: string,
  ) {}

  async send(messages: Envelope[], opts: { delaySeconds?: number } = {}): Promise<void> {
    const delay = opts.delaySeconds === undefined ? {} : { DelaySeconds: Math.max(0, Math.min(SQS_MAX_DELAY_SECONDS, Math.round(opts.delaySeconds))) };
    for (const m of messages) {
      const parsed = Envelope.safeParse(m);
      if (!parsed.success) throw new ValidationError("queue message", formatIssues(parsed.error.issues));
    }
    const queued: string[] = [];
    for (let i = 0; i < messages.length; i += 10) {
      const batch = messages.slice(i, i + 10);
      const rest = messages.slice(i + 10).map((m) => m.id);
      let failed: Set<number>;
      try {
        const out = await aws("send messages", () =>
          this.sqs.send(
            new SendMessageBatchCommand({ QueueUrl: this.url, Entries: batch.map((m, j) => ({ Id: String(j), MessageBody: JSON.stringify(m), ...delay, ...tenantOf(m) })) }),
          ),
        );
        failed = new Set((out.Failed ?? []).map((f) => Number(f.Id)));
        if (failed.size > 0) {
          const cause = new StoreUnavailableError(`SQS refused ${failed.size} of ${batch.length} messages: ${(out.Failed ?? []).map((f) => f.Message).join("; ")}`);
          for (const [j, m] of batch.entries()) if (!failed.has(j)) queued.push(m.id);
          throw new PartialSendError(queued, [...batch.filter((_, j) => failed.has(j)).map((m) => m.id), ...rest], { cause });
        }
      } catch (err) {
        if (err instanceof PartialSendError) throw err;
        if (queued.length === 0) throw err;
        throw new PartialSendError(queued, [...batch.map((m) => m.id), ...rest], { cause: err });
      }
      queued.push(...batch.map((m) => m.id));
    }
  }

  async approximateCount(): Promise<{ visible: number; inFlight: number }> {
    const out = await aws("queue attributes", () =>
      this.sqs.send(new GetQueueAttributesCommand({ QueueUrl: this.url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] })),
    );
    return { visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0), inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0) };
  }
}

/** The message's tenant for a fair queue: the key that pays for it (none: SQS counts it as a tenant of its own). */
const tenantOf = (m: Envelope) => (m.payer ? { MessageGroupId: m.payer.keyId } : {});

/** Creates a queue and its dead-letter queue with a redrive policy; returns both URLs. */
export async function createQueueWithDlq(sqs: SQSClient, name: string, opts: { maxReceiveCount: number; visibilityTimeoutSeconds: number }) {
  const dlq = await aws("create DLQ", () => sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` })));
  const dlqArn = (await aws("DLQ arn", () => sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] })))).Attributes!.QueueArn!;
  const queue = await aws("create queue", () =>
    sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: {
          VisibilityTimeout: String(opts.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: opts.maxReceiveCount }),
        },
      }),
    ),
  );
  return { url: queue.QueueUrl!, dlqUrl: dlq.QueueUrl! };
}
