import { Envelope, type Payer } from "@harness-s/core/messaging";
import type { CostUsage } from "@harness-s/core/billing";
import { HarnessSError } from "@harness-s/core";
import {
  type EventLogger,
  type LogEvent,
  currentCorrelationId,
  jsonLinesLogger,
  mintCorrelationId,
  withCorrelationId,
} from "@harness-s/core/observability";
import { invocationBiller, type WorkerMetering } from "./worker-metering.ts";
import { SqsEvent, type SqsBatchResponse } from "@harness-s/adapters/sqs";

type Body<T extends Envelope["type"]> = Extract<Envelope, { type: T }>["body"];

/** Fields a record's processing adds to its line (a failed slot's code and reason). */
export type RecordNote = (fields: Omit<LogEvent, "event">) => void;

/**
 * A worker's line sink that also carries the composition root's {@link EventLogger}: handlers pass
 * their `log` on to {@link createSqsWorker} as they are, and it writes its records' events there.
 * A free-text line a handler writes to it becomes a `worker.note` event.
 */
export type WorkerLog = ((line: string) => void) & { events?: EventLogger };

/** A {@link WorkerLog} of `events` for the worker `name`. */
export function workerLog(events: EventLogger, name: string): WorkerLog {
  return Object.assign(
    (line: string) =>
      events.event({
        event: "worker.note",
        level: "warn",
        correlationId: currentCorrelationId(),
        function: name,
        message: line,
      }),
    { events },
  );
}

/** Where a Lambda worker writes without a logger of its composition root's: JSON lines, failures on stderr. */
export const stdioEvents = jsonLinesLogger({
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});

/**
 * What a record ended as: the use-case's outcome when it names one ("stored", "duplicate", a run's status), else "ok".
 */
function outcomeOf(result: unknown): string {
  if (typeof result === "string") return result;
  if (result && typeof result === "object" && "status" in result && typeof result.status === "string")
    return result.status;
  return "ok";
}

const errorCodeOf = (err: unknown) => (err instanceof HarnessSError ? err.code : "UNHANDLED");

/** What a record's line tells of its envelope: its type, its id, and its payer's key and job. */
function envelopeFields(envelope: Envelope): Partial<LogEvent> {
  return {
    type: envelope.type,
    envelopeId: envelope.id,
    keyId: envelope.payer?.keyId,
    jobId: envelope.payer?.jobId,
  };
}

/**
 * Starts processing one envelope under its correlation id (minted when it has none): what it ends as, the notes
 * its processing adds, and the correlation id. With `metering`, what it consumes is counted into a bill of its
 * payer's, added to `bills`, with the time it took.
 */
function startRun<T extends Envelope["type"]>(
  envelope: Envelope,
  process: (body: Body<T>, id: string, envelope: Extract<Envelope, { type: T }>, note: RecordNote) => Promise<unknown>,
  metering: WorkerMetering | undefined,
  bills: { payer?: Payer; used: CostUsage; ms: number }[],
): { done: Promise<unknown>; notes: Omit<LogEvent, "event">; correlationId: string } {
  const typed = envelope as Extract<Envelope, { type: T }>;
  const correlationId = envelope.correlationId ?? mintCorrelationId();
  const notes: Omit<LogEvent, "event"> = {};
  const note: RecordNote = (fields) => Object.assign(notes, fields);
  const processed = () => withCorrelationId(correlationId, () => process(typed.body as Body<T>, typed.id, typed, note));
  if (!metering) return { done: processed(), notes, correlationId };
  const bill = { ...(envelope.payer ? { payer: envelope.payer } : {}), used: {} as CostUsage, ms: 0 };
  bills.push(bill);
  const began = performance.now();
  const done = metering.consumption.within(bill.used, processed).finally(() => {
    bill.ms = performance.now() - began;
  });
  return { done, notes, correlationId };
}

/** What an SQS worker may be given beside its queue, its message types and its processing. */
export interface SqsWorkerOptions<T extends Envelope["type"]> {
  log?: WorkerLog;
  logger?: EventLogger;
  /** Called (best effort) when a record fails on its last receive before the DLQ. */
  lastTry?: { maxReceives: number; giveUp: (body: Body<T>, id: string, err: unknown) => Promise<void> };
  /**
   * Called (best effort) with the parsed JSON of a record that is not a valid envelope: it can
   * never succeed, so what it was for is told at once (a rescue's slot failed with its code),
   * while the record itself goes on to the DLQ.
   */
  malformed?: (json: unknown, err: unknown) => Promise<void>;
  /** Meters what each record cost to its payer (one write per payer per invocation). */
  metering?: WorkerMetering;
}

/**
 * One SQS worker: each record (concurrently) is parsed (JSON, then the versioned envelope) and must carry
 * `type`; `process` runs once per record, under the envelope's correlation id (a message it sends
 * carries it on). A record that fails to parse or to process is reported as a batch item failure,
 * so SQS retries it and moves it to the DLQ at maxReceiveCount. Each record ends in one
 * `queue.record` event (its correlation id, type, id, payer's key and job, outcome, error code,
 * ms) to `logger`, or to `log`'s events; a plain `log` hears of failed records only, as text.
 *
 * @example
 * const handler = createSqsWorker("profile", "profile.evidence", (body, id) => applyEvidence(id, body, ledger));
 */
export function createSqsWorker<T extends Envelope["type"]>(
  queue: string,
  /** The type of message the queue carries, or the types (the coordinator's: experiments and pool evolutions). */
  type: T | readonly T[],
  process: (body: Body<T>, id: string, envelope: Extract<Envelope, { type: T }>, note: RecordNote) => Promise<unknown>,
  opts: SqsWorkerOptions<T> = {},
) {
  const events = opts.logger ?? opts.log?.events ?? (opts.log ? undefined : stdioEvents);
  const text = events ? undefined : opts.log;
  const { lastTry, metering, malformed } = opts;
  const types: readonly string[] = Array.isArray(type) ? type : [type];
  const bill = metering ? invocationBiller(metering) : undefined;
  return async (raw: unknown): Promise<SqsBatchResponse> => {
    const started = performance.now();
    const event = SqsEvent.parse(raw);
    const batchItemFailures: { itemIdentifier: string }[] = [];
    const bills: { payer?: Payer; used: CostUsage; ms: number }[] = [];
    // Records run concurrently, each idempotent on its envelope id; copies of one envelope in the
    // same batch share a single run (so a duplicate never calls a voter or a policy twice).
    const runs = new Map<string, { done: Promise<unknown>; notes: Omit<LogEvent, "event">; correlationId: string }>();
    const run = (envelope: Envelope) => startRun(envelope, process, metering, bills);
    await Promise.all(
      event.Records.map(async (record) => {
        const began = performance.now();
        const receive = Number(record.attributes.ApproximateReceiveCount);
        const line: LogEvent = { event: "queue.record", function: queue, messageId: record.messageId, receive };
        let envelope: Envelope | undefined;
        let json: unknown;
        try {
          json = JSON.parse(record.body);
          envelope = Envelope.parse(json);
          Object.assign(line, envelopeFields(envelope));
          if (!types.includes(envelope.type))
            throw new Error(`a ${envelope.type} message does not belong on the ${queue} queue`);
          if (!runs.has(envelope.id)) runs.set(envelope.id, run(envelope));
          const { done, notes, correlationId } = runs.get(envelope.id)!;
          line.correlationId = correlationId;
          const result = await done;
          Object.assign(line, { outcome: outcomeOf(result) }, notes);
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          Object.assign(
            line,
            { level: "warn", outcome: "error", errorCode: errorCodeOf(err), reason },
            envelope ? runs.get(envelope.id)?.notes : {},
          );
          text?.(`${queue}: message ${record.messageId} failed (receive ${receive}): ${reason}`);
          batchItemFailures.push({ itemIdentifier: record.messageId });
          const told = (what: string) => (e: unknown) => {
            line.giveUpError = String(e);
            text?.(`${queue}: could not record ${what}: ${String(e)}`);
          };
          if (!envelope && json !== undefined)
            await malformed?.(json, err).catch(told(`malformed message ${record.messageId}`));
          if (lastTry && envelope && types.includes(envelope.type) && receive >= lastTry.maxReceives) {
            Object.assign(line, { level: "error", gaveUp: true });
            await lastTry.giveUp(envelope.body as Body<T>, envelope.id, err).catch(told(`giving up on ${envelope.id}`));
          }
        } finally {
          line.ms = Math.round(performance.now() - began);
          events?.event(line);
        }
      }),
    );
    await bill?.(bills.length ? bills : [{ used: {}, ms: 0 }], performance.now() - started);
    return { batchItemFailures };
  };
}
