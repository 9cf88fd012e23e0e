import { CoreError } from "../errors.ts";

/**
 * A send to a queue failed part-way: `queued` message ids went out, `notQueued` did not. Resending
 * the same envelopes is safe (consumers are idempotent on the envelope id).
 */
export class PartialSendError extends CoreError {
  constructor(
    readonly queued: string[],
    readonly notQueued: string[],
    options?: { cause?: unknown },
    readonly context: Record<string, unknown> = {},
  ) {
    super(
      "PARTIAL_SEND",
      `${queued.length} of ${queued.length + notQueued.length} messages were queued before the queue failed; resend the rest`,
      options,
    );
  }

  /** The same failure, naming what the caller's request created (e.g. the rescue's id). */
  withContext(context: Record<string, unknown>): PartialSendError {
    return new PartialSendError(this.queued, this.notQueued, { cause: this.cause }, { ...this.context, ...context });
  }
}
