import { HarnessSError } from "../errors.ts";

/** The caller sent no valid credentials. */
export class UnauthenticatedError extends HarnessSError {
  constructor() {
    super("UNAUTHENTICATED", "a valid API key is required (Authorization: Bearer <key>)");
  }
}

/** The caller's key does not carry the scope an operation needs. */
export class ForbiddenError extends HarnessSError {
  constructor(scope: string) {
    super("FORBIDDEN", `this API key lacks the scope ${scope}`);
  }
}

/** The caller's key has used its quota. */
export class QuotaExceededError extends HarnessSError {
  constructor(used: number, quota: number) {
    super("QUOTA_EXCEEDED", `request quota used up (${used} of ${quota})`);
  }
}

/** A write would change something immutable, or collided with a different value. */
export class ConflictError extends HarnessSError {
  constructor(detail: string) {
    super("CONFLICT", detail);
  }
}

/** A store or queue failed for reasons outside the caller's control. */
export class StoreUnavailableError extends HarnessSError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super("STORE_UNAVAILABLE", detail, options);
  }
}

/** A capability this deployment does not provide (yet): answered, never faked. */
export class NotConfiguredError extends HarnessSError {
  constructor(detail: string) {
    super("NOT_CONFIGURED", detail);
  }
}

/** A request body is larger than the endpoint accepts (HTTP 413). */
export class PayloadTooLargeError extends HarnessSError {
  constructor(readonly maxBytes: number) {
    super("PAYLOAD_TOO_LARGE", `request body exceeds ${maxBytes} bytes`);
  }
}

/** A request URL is longer than the API accepts (HTTP 414). */
export class UriTooLongError extends HarnessSError {
  constructor(readonly maxChars: number) {
    super("URI_TOO_LONG", `request URL exceeds ${maxChars} characters`);
  }
}

/** The key already has as many experiments queued or running as it may (HTTP 429). */
export class ConcurrencyLimitError extends HarnessSError {
  constructor(readonly limit: number) {
    super("CONCURRENCY_LIMIT", `this key already has ${limit} experiments queued or running; wait for one to end or cancel one`);
  }
}

/**
 * A send to a queue failed part-way: `queued` message ids went out, `notQueued` did not. Resending
 * the same envelopes is safe (consumers are idempotent on the envelope id).
 */
export class PartialSendError extends HarnessSError {
  constructor(
    readonly queued: string[],
    readonly notQueued: string[],
    options?: { cause?: unknown },
    readonly context: Record<string, unknown> = {},
  ) {
    super("PARTIAL_SEND", `${queued.length} of ${queued.length + notQueued.length} messages were queued before the queue failed; resend the rest`, options);
  }

  /** The same failure, naming what the caller's request created (e.g. the rescue's id). */
  withContext(context: Record<string, unknown>): PartialSendError {
    return new PartialSendError(this.queued, this.notQueued, { cause: this.cause }, { ...this.context, ...context });
  }
}
