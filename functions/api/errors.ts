import { type CoreErrorCode, HarnessSError } from "@harness-s/core";
import type { AdaptersErrorCode } from "@harness-s/adapters";
import type { DbbenchErrorCode } from "@harness-s/dbbench";

/** The codes only the HTTP layer raises: how a request arrived, not what it asked. */
export const TRANSPORT_ERROR_CODES = ["URI_TOO_LONG", "UNSUPPORTED_MEDIA_TYPE", "REQUEST_TIMEOUT"] as const;
export type TransportErrorCode = (typeof TRANSPORT_ERROR_CODES)[number];

class TransportError extends HarnessSError<TransportErrorCode> {}

/** A body sent with a content type the endpoint does not read (HTTP 415); JSON endpoints read application/json only. */
export class UnsupportedMediaTypeError extends TransportError {
  constructor(readonly got: string | undefined) {
    super(
      "UNSUPPORTED_MEDIA_TYPE",
      `this endpoint reads application/json bodies; got ${got ? JSON.stringify(got) : "no content-type"}`,
    );
  }
}

/** A body that stopped arriving (idle past the limit) or took longer than the deadline in all (HTTP 408). */
export class RequestTimeoutError extends TransportError {
  constructor(what: string) {
    super("REQUEST_TIMEOUT", what);
  }
}

/** A request URL is longer than the API accepts (HTTP 414). */
export class UriTooLongError extends TransportError {
  constructor(readonly maxChars: number) {
    super("URI_TOO_LONG", `request URL exceeds ${maxChars} characters`);
  }
}

/** Every error code of every package the API runs, and what HTTP says for it (exhaustive by type). */
export type ErrorCode = CoreErrorCode | AdaptersErrorCode | DbbenchErrorCode | TransportErrorCode;
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  BUDGET_EXCEEDED: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  STALE_POLICY_VERSION: 409,
  EXPERIMENT_CANCELLED: 409,
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  QUOTA_EXCEEDED: 429,
  RATE_LIMITED: 429,
  CONCURRENCY_LIMIT: 429,
  NOT_CONFIGURED: 501,
  INVALID_BALLOT: 502,
  POLICY_ENDPOINT_FAILED: 502,
  POLICY_UPDATE_IN_PROGRESS: 409,
  POLICY_CAPACITY_EXCEEDED: 503,
  POLICY_ENDPOINT_STOPPING: 503,
  POLICY_NOT_TRAINED_HERE: 409,
  POLICY_CONTEXT_TOO_LONG: 400,
  URL_NOT_ALLOWED: 400,
  ENDPOINT_PROBE_FAILED: 400,
  ENDPOINT_NO_TOKEN_IDS: 400,
  ENDPOINT_NOT_TOKEN_EXACT: 400,
  SERVED_MODEL_MISMATCH: 409,
  ENDPOINT_ROUTE_MISSING: 400,
  POLICY_REPLY_INVALID: 502,
  ENVIRONMENT_FAILED: 502,
  POLICY_SAMPLE_TIMEOUT: 504,
  QUORUM_NOT_MET: 503,
  STORE_UNAVAILABLE: 503,
  PARTIAL_SEND: 503,
  SQL_SERVER_UNAVAILABLE: 503,
  VOTER_TIMEOUT: 504,
  ROLLOUT_TIMEOUT: 504,
  ROLLOUT_FAILED: 502,
  ROLLOUT_LOST: 502,
  EPISODE_CLOSED: 410,
  UPSTREAM_FAILED: 502,
  UPSTREAM_REJECTED: 400,
  EVOLUTION_FAILED: 422,
} as const satisfies Record<ErrorCode, number>;

/** The status of a code; one no package declares (a bug) is a 500. */
export function statusOf(code: string): number {
  return Object.hasOwn(ERROR_STATUS, code) ? ERROR_STATUS[code as ErrorCode] : 500;
}
