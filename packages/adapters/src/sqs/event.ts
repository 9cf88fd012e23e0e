import { z } from "zod";

/** The SQS event a Lambda receives (the fields handlers rely on), parsed with zod. */
export const SqsRecord = z.object({
  messageId: z.string(),
  receiptHandle: z.string(),
  body: z.string(),
  attributes: z.object({ ApproximateReceiveCount: z.string() }).loose(),
  messageAttributes: z.record(z.string(), z.unknown()).default({}),
  md5OfBody: z.string().default(""),
  eventSource: z.literal("aws:sqs"),
  eventSourceARN: z.string(),
  awsRegion: z.string(),
});
export type SqsRecord = z.infer<typeof SqsRecord>;

export const SqsEvent = z.object({ Records: z.array(SqsRecord) });
export type SqsEvent = z.infer<typeof SqsEvent>;

/** Partial batch response: the ids of records to retry (ReportBatchItemFailures). */
export interface SqsBatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}
