import { ValidationError, formatIssues } from "@harness-s/core";
import { Envelope as EnvelopeSchema, type Envelope, type MessageQueue } from "@harness-s/core/messaging";

/** Collects sent envelopes; `take` hands them to a consumer (tests, the embedded default). */
export class MemoryQueue implements MessageQueue {
  private readonly pending: Envelope[] = [];

  /** Delays asked for with each send, in order (memory delivers nothing by itself: `take` is the worker). */
  readonly delays: number[] = [];

  /** Validates like the SQS adapter: one invalid envelope refuses the whole call. */
  async send(messages: Envelope[], opts: { delaySeconds?: number } = {}): Promise<void> {
    if (opts.delaySeconds !== undefined) this.delays.push(opts.delaySeconds);
    const parsed = messages.map((m) => EnvelopeSchema.safeParse(m));
    const bad = parsed.find((p) => !p.success);
    if (bad && !bad.success) throw new ValidationError("queue message", formatIssues(bad.error.issues));
    this.pending.push(...parsed.map((p) => p.data!));
  }

  take(): Envelope[] {
    return this.pending.splice(0, this.pending.length);
  }
}
