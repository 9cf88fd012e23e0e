import { Envelope, type Payer } from "@harness-s/core/messaging";
import type { CostUsage } from "@harness-s/core/billing";
import { invocationBiller, type WorkerMetering } from "./worker-metering.ts";
import { SqsEvent, type SqsBatchResponse } from "@harness-s/adapters";

type Body<T extends Envelope["type"]> = Extract<Envelope, { type: T }>["body"];

/**
 * One SQS worker: each record (concurrently) is parsed (JSON, then the versioned envelope) and must carry
 * `type`; `process` runs once per record. A record that fails to parse or to process is reported
 * as a batch item failure, so SQS retries it and moves it to the DLQ at maxReceiveCount.
 *
 * @example
 * const handler = createSqsWorker("profile", "profile.evidence", (body, id) => applyEvidence(id, body, ledger));
 */
export function createSqsWorker<T extends Envelope["type"]>(
  queue: string,
  /** The type of message the queue carries, or the types (the coordinator's: experiments and pool evolutions). */
  type: T | readonly T[],
  process: (body: Body<T>, id: string, envelope: Extract<Envelope, { type: T }>) => Promise<unknown>,
  opts: {
    log?: (line: string) => void;
    /** Called (best effort) when a record fails on its last receive before the DLQ. */
    lastTry?: { maxReceives: number; giveUp: (body: Body<T>, id: string, err: unknown) => Promise<void> };
    /** Meters what each record cost to its payer (one write per payer per invocation). */
    metering?: WorkerMetering;
  } = {},
) {
  const log = opts.log ?? ((line: string) => console.warn(line));
  const { lastTry, metering } = opts;
  const types: readonly string[] = Array.isArray(type) ? type : [type];
  const bill = metering ? invocationBiller(metering) : undefined;
  return async (raw: unknown): Promise<SqsBatchResponse> => {
    const started = performance.now();
    const event = SqsEvent.parse(raw);
    const batchItemFailures: { itemIdentifier: string }[] = [];
    const bills: { payer?: Payer; used: CostUsage; ms: number }[] = [];
    // Records run concurrently, each idempotent on its envelope id; copies of one envelope in the
    // same batch share a single run (so a duplicate never calls a voter or a policy twice).
    const runs = new Map<string, Promise<unknown>>();
    const run = (envelope: Envelope) => {
      const typed = envelope as Extract<Envelope, { type: T }>;
      if (!metering) return process(typed.body as Body<T>, typed.id, typed);
      const bill = { ...(envelope.payer ? { payer: envelope.payer } : {}), used: {} as CostUsage, ms: 0 };
      bills.push(bill);
      const began = performance.now();
      return metering.consumption
        .within(bill.used, () => process(typed.body as Body<T>, typed.id, typed))
        .finally(() => {
          bill.ms = performance.now() - began;
        });
    };
    await Promise.all(
      event.Records.map(async (record) => {
        let envelope: Envelope | undefined;
        try {
          envelope = Envelope.parse(JSON.parse(record.body));
          if (!types.includes(envelope.type)) throw new Error(`a ${envelope.type} message does not belong on the ${queue} queue`);
          if (!runs.has(envelope.id)) runs.set(envelope.id, run(envelope));
          await runs.get(envelope.id);
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          const receive = Number(record.attributes.ApproximateReceiveCount);
          log(`${queue}: message ${record.messageId} failed (receive ${receive}): ${reason}`);
          batchItemFailures.push({ itemIdentifier: record.messageId });
          if (lastTry && envelope && types.includes(envelope.type) && receive >= lastTry.maxReceives) {
            await lastTry.giveUp(envelope.body as Body<T>, envelope.id, err).catch((e) => log(`${queue}: could not record giving up on ${envelope!.id}: ${String(e)}`));
          }
        }
      }),
    );
    await bill?.(bills.length ? bills : [{ used: {}, ms: 0 }], performance.now() - started);
    return { batchItemFailures };
  };
}
