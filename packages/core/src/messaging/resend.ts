import { envelope, type Envelope, type EnvelopeOf, type EnvelopeType } from "./envelope.ts";
import type { MessageQueue } from "./queue.ts";

/**
 * The sender a job found under another attempt's lease looks again with (`lookAgainWhenLapsed`): the job's own message
 * (`type` with `body`, paid by the record's key) sent on `queue` again after `delaySeconds`, its id `<prefix>:lease-<the
 * lease it waits out>` (deliveries that meet the same lease send one message). None without a queue.
 */
export function resendAfterLease<T extends EnvelopeType>(
  queue: MessageQueue | undefined,
  job: { id: string; prefix: string; type: T; body: EnvelopeOf<T>["body"] },
): ((record: { keyId: string; leaseUntil?: number | undefined }, delaySeconds: number) => Promise<void>) | undefined {
  if (!queue) return undefined;
  return (record, delaySeconds) => {
    // One member of the union of envelopes, which a generic type cannot name.
    const message = envelope(job.type, `${job.prefix}:lease-${record.leaseUntil}`, job.body, {
      keyId: record.keyId,
      jobId: job.id,
    }) as Envelope;
    return queue.send([message], { delaySeconds });
  };
}
