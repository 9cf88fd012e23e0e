import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { Envelope, ValidationError, formatIssues, type MessageQueue } from "@harness-s/core";
import { aws } from "../errors.ts";

/** Sends validated envelopes to one SQS queue (batches of up to 10, as SQS allows). */
export class SqsQueue implements MessageQueue {
  constructor(
    private readonly sqs: SQSClient,
    readonly url: string,
  ) {}

  async send(messages: Envelope[]): Promise<void> {
    for (const m of messages) {
      const parsed = Envelope.safeParse(m);
      if (!parsed.success) throw new ValidationError("queue message", formatIssues(parsed.error.issues));
    }
    for (let i = 0; i < messages.length; i += 10) {
      const batch = messages.slice(i, i + 10);
      const out = await aws("send messages", () =>
        this.sqs.send(new SendMessageBatchCommand({ QueueUrl: this.url, Entries: batch.map((m, j) => ({ Id: String(j), MessageBody: JSON.stringify(m) })) })),
      );
      if (out.Failed?.length) throw new Error(`SQS refused ${out.Failed.length} of ${batch.length} messages: ${out.Failed.map((f) => f.Message).join("; ")}`);
    }
  }

  async approximateCount(): Promise<{ visible: number; inFlight: number }> {
    const out = await aws("queue attributes", () =>
      this.sqs.send(new GetQueueAttributesCommand({ QueueUrl: this.url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] })),
    );
    return { visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0), inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0) };
  }
}

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
