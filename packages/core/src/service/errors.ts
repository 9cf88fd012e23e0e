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
