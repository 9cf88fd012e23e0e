import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { Envelope, type MessageQueue } from "@harness-s/core/messaging";
import { PartialSendError } from "@harness-s/core/messaging";
import { StoreUnavailableError, ValidationError, formatIssues } from "@harness-s/core";
import { aws } from "../../errors.ts";

/** The most SQS lets a message wait before it is first seen (`DelaySeconds`). */
export const SQS_MAX_DELAY_SECONDS = 900;

/**
 * Sends validated envelopes to one SQS queue (batches of up to 10, as SQS allows). A message with
 * a payer goes with its key as `MessageGroupId`: on a standard queue that makes it an SQS fair
 * queue, where a key with a backlog (many messages in flight) does not hold back another key's
 * messages. The batches go out at once; when some went out and others failed (or SQS refused some
 * of their entries) it is a {@link PartialSendError} naming the envelope ids that were and were
 * not queued; when none went out, the queue's own error.
 */
export class SqsQueue implements MessageQueue {
  constructor(
    private readonly sqs: SQSClient,
    readonly url: string,
  ) {}

  async send(messages: Envelope[], opts: { delaySeconds?: number } = {}): Promise<void> {
    const delay =
      opts.delaySeconds === undefined
        ? {}
        : { DelaySeconds: Math.max(0, Math.min(SQS_MAX_DELAY_SECONDS, Math.round(opts.delaySeconds))) };
    for (const m of messages) {
      const parsed = Envelope.safeParse(m);
      if (!parsed.success) throw new ValidationError("queue message", formatIssues(parsed.error.issues));
    }
    const batches = Array.from({ length: Math.ceil(messages.length / 10) }, (_, i) =>
      messages.slice(i * 10, i * 10 + 10),
    );
    // The batches go out together: a rescue of 32 rollouts waits one round trip to SQS, not four.
    const sent = await Promise.allSettled(batches.map((batch) => this.sendBatch(batch, delay)));
    const queued: string[] = [];
    const notQueued: string[] = [];
    for (const [i, batch] of batches.entries()) {
      const out = sent[i]!;
      for (const [j, m] of batch.entries())
        (out.status === "fulfilled" && !out.value.has(j) ? queued : notQueued).push(m.id);
    }
    if (notQueued.length === 0) return;
    const firstFailure = sent.find((out) => out.status === "rejected");
    if (queued.length === 0 && firstFailure) throw firstFailure.reason;
    const refused = sent.flatMap((out, i) =>
      out.status === "fulfilled" && out.value.size
        ? [`SQS refused ${out.value.size} of ${batches[i]!.length} messages: ${[...out.value.values()].join("; ")}`]
        : [],
    );
    throw new PartialSendError(queued, notQueued, {
      cause: firstFailure?.reason ?? new StoreUnavailableError(refused.join("; ")),
    });
  }

  /** One SendMessageBatch; the positions in `batch` SQS refused, with why (each entry's `Id` is its position). */
  private async sendBatch(batch: Envelope[], delay: { DelaySeconds?: number }): Promise<Map<number, string>> {
    const out = await aws("send messages", () =>
      this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.url,
          Entries: batch.map((m, j) => ({ Id: String(j), MessageBody: JSON.stringify(m), ...delay, ...tenantOf(m) })),
        }),
      ),
    );
    return new Map((out.Failed ?? []).map((f) => [Number(f.Id), f.Message ?? f.Code ?? "refused"]));
  }

  async approximateCount(): Promise<{ visible: number; inFlight: number }> {
    const out = await aws("queue attributes", () =>
      this.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.url,
          AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        }),
      ),
    );
    return {
      visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }
}

/** The message's tenant for a fair queue: the key that pays for it (none: SQS counts it as a tenant of its own). */
const tenantOf = (m: Envelope) => (m.payer ? { MessageGroupId: m.payer.keyId } : {});

/** Creates a queue and its dead-letter queue with a redrive policy; returns both URLs. */
export async function createQueueWithDlq(
  sqs: SQSClient,
  name: string,
  opts: { maxReceiveCount: number; visibilityTimeoutSeconds: number },
) {
  const dlq = await aws("create DLQ", () => sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` })));
  const dlqArn = (
    await aws("DLQ arn", () =>
      sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] })),
    )
  ).Attributes!.QueueArn!;
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
