import { ConflictError, CoreError } from "../errors.ts";

/** The caller sent no valid credentials. */
export class UnauthenticatedError extends CoreError {
  constructor() {
    super("UNAUTHENTICATED", "a valid API key is required (Authorization: Bearer <key>)");
  }
}

/** A key asked to give itself a scope or a limit it does not hold. */
export class SelfRaiseError extends CoreError {
  constructor() {
    super("FORBIDDEN", "a key cannot raise its own scopes or limits; ask another admin key");
  }
}

/**
 * A key asked to make, change or take the secret of a key with a scope or a limit beyond its own
 * (a limited admin making an unlimited one, which could then lift the first one's limits).
 */
export class BeyondOwnLimitsError extends CoreError {
  constructor(what: string) {
    super(
      "FORBIDDEN",
      `a key ${what} only within its own scopes and limits (quota, budget, rate, expiry); ask an admin key with more`,
    );
  }
}

/** The caller's key has used its quota. */
export class QuotaExceededError extends CoreError {
  constructor(used: number, quota: number) {
    super("QUOTA_EXCEEDED", `request quota used up (${used} of ${quota})`);
  }
}

/**
 * The caller's key is past its rate (HTTP 429 with Retry-After: the whole seconds until its next request is let in).
 */
export class RateLimitedError extends CoreError {
  readonly retryAfterSeconds: number;
  constructor(
    readonly perSecond: number,
    /** How long until the key's next token (ms). */
    readonly waitMs: number,
  ) {
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    super(
      "RATE_LIMITED",
      `this API key is limited to ${perSecond} requests per second; retry after ${retryAfterSeconds} s`,
    );
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * A key change would leave the deployment without a working admin key that never expires (the
 * last such key revoked, expiring, or losing its admin scope), written as one atomic rule by the
 * key store, so concurrent changes cannot pass it together.
 */
export class LastAdminError extends ConflictError {
  constructor(readonly keyId: string) {
    super(
      `key ${keyId} is the last working admin key without an expiry: make another admin key without an expiry first`,
    );
  }
}
