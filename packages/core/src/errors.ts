import type { z } from "zod";

/**
 * Every code core's errors carry: the stable vocabulary callers and the HTTP mapping read. Other
 * packages declare their own union (adapters, dbbench); the API's status map covers all of them.
 */
export const CORE_ERROR_CODES = [
  "VALIDATION_FAILED",
  "QUORUM_NOT_MET",
  "VOTER_TIMEOUT",
  "INVALID_BALLOT",
  "STALE_POLICY_VERSION",
  "NOT_FOUND",
  "BUDGET_EXCEEDED",
  "UNAUTHENTICATED",
  "FORBIDDEN",
  "QUOTA_EXCEEDED",
  "RATE_LIMITED",
  "CONFLICT",
  "STORE_UNAVAILABLE",
  "NOT_CONFIGURED",
  "PAYLOAD_TOO_LARGE",
  "CONCURRENCY_LIMIT",
  "PARTIAL_SEND",
  "EXPERIMENT_CANCELLED",
  "ROLLOUT_TIMEOUT",
  /**
   * A rollout slot failed with an error that carries no code of its own (a failed slot's code, never an HTTP answer's).
   */
  "ROLLOUT_FAILED",
  /**
   * A rollout slot whose every delivery ended with its process (killed, out of memory, past its timeout): its message
   * went to the dispatch DLQ (a failed slot's code, never an HTTP answer's).
   */
  "ROLLOUT_LOST",
  "EPISODE_CLOSED",
  "UPSTREAM_FAILED",
  "UPSTREAM_REJECTED",
  /** A pool evolution ended without a pool (a job's failure code, never an HTTP answer's). */
  "EVOLUTION_FAILED",
] as const;
export type CoreErrorCode = (typeof CORE_ERROR_CODES)[number];

/** Base class of every domain error: a stable `code` for callers and HTTP mapping, and a `cause`. */
export class HarnessSError<C extends string = string> extends Error {
  constructor(
    readonly code: C,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Core's errors: their codes are {@link CoreErrorCode}s. */
export class CoreError extends HarnessSError<CoreErrorCode> {}

/** A harness spec, pool or config failed validation; `issues` lists readable problems. */
export class ValidationError extends CoreError {
  constructor(
    what: string,
    readonly issues: string[],
    options?: { cause?: unknown },
  ) {
    super("VALIDATION_FAILED", `${what} is invalid:\n  - ${issues.join("\n  - ")}`, options);
  }
}

/** A referenced entity (harness, task, pool) does not exist. */
export class NotFoundError extends CoreError {
  constructor(kind: string, id: string) {
    super("NOT_FOUND", `${kind} ${JSON.stringify(id)} not found`);
  }
}

/** A rollout budget would be exceeded. */
export class BudgetExceededError extends CoreError {
  constructor(detail: string) {
    super("BUDGET_EXCEEDED", detail);
  }
}

/** The most issues an error lists (a hostile array can carry one per element); the rest are counted. */
export const MAX_LISTED_ISSUES = 20;

/** Formats zod issues as `path: message` lines, at most {@link MAX_LISTED_ISSUES} of them. */
export function formatIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string[] {
  const listed = issues
    .slice(0, MAX_LISTED_ISSUES)
    .map((i) => `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`);
  return issues.length > MAX_LISTED_ISSUES ? [...listed, `… and ${issues.length - MAX_LISTED_ISSUES} more`] : listed;
}

/**
 * `schema` applied to `input`, or a {@link ValidationError} naming `what` with every issue.
 *
 * @example
 * const train = parseOrThrow(TrainConfig, body.train, "train");
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new ValidationError(what, formatIssues(parsed.error.issues));
  return parsed.data;
}

/**
 * The caller's key does not carry the scope an operation needs; `keyId` (never answered) names it on the request's log
 * line.
 */
export class ForbiddenError extends CoreError {
  constructor(
    scope: string,
    readonly keyId?: string,
  ) {
    super("FORBIDDEN", `this API key lacks the scope ${scope}`);
  }
}

/** A write would change something immutable, or collided with a different value. */
export class ConflictError extends CoreError {
  constructor(detail: string) {
    super("CONFLICT", detail);
  }
}

/** A store or queue failed for reasons outside the caller's control. */
export class StoreUnavailableError extends CoreError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super("STORE_UNAVAILABLE", detail, options);
  }
}

/** A capability this deployment does not provide (yet): answered, never faked. */
export class NotConfiguredError extends CoreError {
  constructor(detail: string) {
    super("NOT_CONFIGURED", detail);
  }
}

/** A request body is larger than the endpoint accepts (HTTP 413). */
export class PayloadTooLargeError extends CoreError {
  constructor(readonly maxBytes: number) {
    super("PAYLOAD_TOO_LARGE", `request body exceeds ${maxBytes} bytes`);
  }
}

/** The key already has as many experiments queued or running as it may (HTTP 429). */
export class ConcurrencyLimitError extends CoreError {
  constructor(
    readonly limit: number,
    what = "experiments",
  ) {
    super(
      "CONCURRENCY_LIMIT",
      `this key already has ${limit} ${what} queued or running; wait for one to end or cancel one`,
    );
  }
}
