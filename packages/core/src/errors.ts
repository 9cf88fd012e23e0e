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
  /** A rollout slot failed with an error that carries no code of its own (a failed slot's code, never an HTTP answer's). */
  "ROLLOUT_FAILED",
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

/** Too few voters answered for a routing decision to count. */
export class QuorumError extends CoreError {
  constructor(
    readonly answered: number,
    readonly required: number,
    readonly failures: { voterId: string; reason: string }[],
  ) {
    super("QUORUM_NOT_MET", `only ${answered} of the required ${required} voters answered (${failures.map((f) => `${f.voterId}: ${f.reason}`).join("; ")})`);
  }
}

/** A voter did not answer in time. */
export class VoterTimeoutError extends CoreError {
  constructor(
    voterId: string,
    readonly ms: number,
  ) {
    super("VOTER_TIMEOUT", `voter ${voterId} did not answer within ${ms} ms`);
  }
}

/** A ballot referred to harnesses that were not candidates, or was otherwise malformed. */
export class InvalidBallotError extends CoreError {
  constructor(
    voterId: string,
    readonly detail: string,
    options?: { cause?: unknown; spent?: VoterSpend },
  ) {
    super("INVALID_BALLOT", `voter ${voterId} returned an invalid ballot: ${detail}`, options);
    this.spent = options?.spent;
  }

  /** What the voter's unusable answers cost (metered like a ballot's). */
  readonly spent: VoterSpend | undefined;
}

/** Tokens an LLM voter used, and their price when one is configured. */
export interface VoterSpend {
  usage: { promptTokens: number; completionTokens: number };
  costUsd?: number;
}

/**
 * A request was made against a policy version the policy is no longer (or not yet) at: an
 * update on a stale base, or a rollout asked for another version. `held` is the version the
 * policy is at, `wanted` the one the request was for; an endpoint's refusal that did not state
 * them leaves them undefined. The wire code of both policy protocols.
 */
export class StalePolicyVersionError extends CoreError {
  constructor(
    readonly held: number | undefined,
    readonly wanted: number | undefined,
    detail?: string,
  ) {
    super("STALE_POLICY_VERSION", detail ?? `update based on policy version ${wanted}, current is ${held}`);
  }
}

/** A rollout asked for a version the endpoint's policy is not at (same code as a stale update). */
export function policyVersionMismatch(policyId: string, requested: number, held: number): StalePolicyVersionError {
  return new StalePolicyVersionError(held, requested, `policy ${policyId} is at version ${held}, the rollout asked for ${requested}`);
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
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`);
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

/** The caller sent no valid credentials. */
export class UnauthenticatedError extends CoreError {
  constructor() {
    super("UNAUTHENTICATED", "a valid API key is required (Authorization: Bearer <key>)");
  }
}

/** The caller's key does not carry the scope an operation needs; `keyId` (never answered) names it on the request's log line. */
export class ForbiddenError extends CoreError {
  constructor(
    scope: string,
    readonly keyId?: string,
  ) {
    super("FORBIDDEN", `this API key lacks the scope ${scope}`);
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
    super("FORBIDDEN", `a key ${what} only within its own scopes and limits (quota, budget, rate, expiry); ask an admin key with more`);
  }
}

/** The caller's key has used its quota. */
export class QuotaExceededError extends CoreError {
  constructor(used: number, quota: number) {
    super("QUOTA_EXCEEDED", `request quota used up (${used} of ${quota})`);
  }
}

/** The caller's key is past its rate (HTTP 429 with Retry-After: the whole seconds until its next request is let in). */
export class RateLimitedError extends CoreError {
  readonly retryAfterSeconds: number;
  constructor(
    readonly perSecond: number,
    /** How long until the key's next token (ms). */
    readonly waitMs: number,
  ) {
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    super("RATE_LIMITED", `this API key is limited to ${perSecond} requests per second; retry after ${retryAfterSeconds} s`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A write would change something immutable, or collided with a different value. */
export class ConflictError extends CoreError {
  constructor(detail: string) {
    super("CONFLICT", detail);
  }
}

/**
 * A key change would leave the deployment without a working admin key that never expires (the
 * last such key revoked, expiring, or losing its admin scope), written as one atomic rule by the
 * key store, so concurrent changes cannot pass it together.
 */
export class LastAdminError extends ConflictError {
  constructor(readonly keyId: string) {
    super(`key ${keyId} is the last working admin key without an expiry: make another admin key without an expiry first`);
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
    super("CONCURRENCY_LIMIT", `this key already has ${limit} ${what} queued or running; wait for one to end or cancel one`);
  }
}

/** A rescue would take a key past its rescue slots in flight (429, as for experiments). */
export class RescueSlotsError extends CoreError {
  constructor(
    readonly limit: number,
    readonly asked: number,
  ) {
    super("CONCURRENCY_LIMIT", `this rescue's ${asked} rollouts would take this key past its ${limit} rescue rollouts in flight; wait for a rescue to end or cancel one`);
  }
}

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
    super("PARTIAL_SEND", `${queued.length} of ${queued.length + notQueued.length} messages were queued before the queue failed; resend the rest`, options);
  }

  /** The same failure, naming what the caller's request created (e.g. the rescue's id). */
  withContext(context: Record<string, unknown>): PartialSendError {
    return new PartialSendError(this.queued, this.notQueued, { cause: this.cause }, { ...this.context, ...context });
  }
}

/** A queued rollout did not come back in time (a stuck worker, a message in the DLQ). */
export class RolloutTimeoutError extends CoreError {
  constructor(jobId: string, index: number, ms: number) {
    super("ROLLOUT_TIMEOUT", `rollout ${jobId}/${index} did not complete within ${ms} ms (is the dispatch worker running? check its DLQ)`);
  }
}

/** A pool evolution found no sibling worth keeping, or its worker was lost on every attempt. */
export class EvolutionFailedError extends CoreError {
  constructor(message: string) {
    super("EVOLUTION_FAILED", message);
  }
}

/** A run was cancelled (`POST /v1/experiments/{id}/cancel`); what it finished is kept. */
export class ExperimentCancelledError extends CoreError {
  constructor(id: string) {
    super("EXPERIMENT_CANCELLED", `experiment ${id} was cancelled`);
  }
}

/** A gateway episode that no longer runs (idle past its limit, ended, or the gateway stopped). */
export class EpisodeClosedError extends CoreError {
  constructor(id: string, why = "it was idle too long, or the gateway stopped") {
    super("EPISODE_CLOSED", `gateway episode ${id} is closed: ${why}`);
  }
}

/** " (HTTP 401)" when the endpoint answered with a status. */
const statusNote = (status: number | undefined) => (status === undefined ? "" : ` (HTTP ${status})`);

/**
 * The model endpoint behind the gateway failed; the episode waits for the agent to send the same
 * request again. The agent is told only the kind of failure: an endpoint's own error text can
 * carry key fragments and account ids, so it stays in `detail`, for the server's log.
 */
export class UpstreamError extends CoreError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown; status?: number },
  ) {
    super("UPSTREAM_FAILED", `the gateway's model endpoint failed${statusNote(options?.status)}; send the same request again and the episode goes on`, options);
    this.status = options?.status;
  }

  readonly status: number | undefined;
}

/** The model endpoint refused the agent's request as sent (HTTP 400, 413, 422: a parameter it does not take, a conversation too long); `detail` is for the log. */
export class UpstreamRejectedError extends CoreError {
  constructor(
    readonly detail: string,
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super("UPSTREAM_REJECTED", `the model endpoint refused this request as sent${statusNote(status)}: check its sampling parameters and length, then send it again`, options);
  }
}
