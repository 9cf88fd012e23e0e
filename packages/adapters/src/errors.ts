import { ConflictError, HarnessSError, StoreUnavailableError } from "@harness-s/core";

/** The codes of the adapters' own errors (the rest pass core's through). */
export const ADAPTERS_ERROR_CODES = [
  "POLICY_ENDPOINT_FAILED",
  "POLICY_UPDATE_IN_PROGRESS",
  "POLICY_CAPACITY_EXCEEDED",
  "POLICY_SAMPLE_TIMEOUT",
  "POLICY_ENDPOINT_STOPPING",
  "POLICY_NOT_TRAINED_HERE",
  "POLICY_CONTEXT_TOO_LONG",
  "URL_NOT_ALLOWED",
  "ENDPOINT_PROBE_FAILED",
  "ENDPOINT_NO_TOKEN_IDS",
  "ENDPOINT_NOT_TOKEN_EXACT",
  "SERVED_MODEL_MISMATCH",
  "ENDPOINT_ROUTE_MISSING",
  "POLICY_REPLY_INVALID",
  "ENVIRONMENT_FAILED",
] as const;
export type AdaptersErrorCode = (typeof ADAPTERS_ERROR_CODES)[number];

/** The worker's own error codes and the domain code each becomes (its 409, 429 and 503 answers). */
export const WORKER_ERROR_CODES = {
  UPDATE_IN_PROGRESS: "POLICY_UPDATE_IN_PROGRESS",
  CAPACITY_EXCEEDED: "POLICY_CAPACITY_EXCEEDED",
  SAMPLE_TIMEOUT: "POLICY_SAMPLE_TIMEOUT",
  STOPPING: "POLICY_ENDPOINT_STOPPING",
  NOT_TRAINED_HERE: "POLICY_NOT_TRAINED_HERE",
  CONTEXT_TOO_LONG: "POLICY_CONTEXT_TOO_LONG",
} as const satisfies Record<string, AdaptersErrorCode>;

/**
 * The worker refused for a reason of its own: another update of the policy is running
 * (`POLICY_UPDATE_IN_PROGRESS`), it holds as many policies, episodes or jobs as it may
 * (`POLICY_CAPACITY_EXCEEDED`), a sample waited past its deadline (`POLICY_SAMPLE_TIMEOUT`), or it
 * is stopping and takes no new update (`POLICY_ENDPOINT_STOPPING`: send it to its replacement), or
 * it serves a model its trainer updates (`POLICY_NOT_TRAINED_HERE`: a trainer's live endpoint), or
 * the turn's text cannot fit the model's context (`POLICY_CONTEXT_TOO_LONG`, a 400: refused by its
 * bytes before it is tokenised, or by its tokens).
 */
export class PolicyWorkerRefusedError extends HarnessSError<AdaptersErrorCode> {
  constructor(
    code: (typeof WORKER_ERROR_CODES)[keyof typeof WORKER_ERROR_CODES],
    detail: string,
    readonly status: number,
  ) {
    super(code, detail);
  }
}

/** The policy endpoint answered with an error or an unreadable body. */
export class PolicyEndpointError extends HarnessSError<AdaptersErrorCode> {
  constructor(
    detail: string,
    options?: { cause?: unknown },
    /** The HTTP status the endpoint answered, when it answered at all. */
    readonly status?: number,
  ) {
    super("POLICY_ENDPOINT_FAILED", detail, options);
  }
}

/**
 * The policy endpoint answered a sample this side can never use: not JSON, outside protocol v2,
 * ids that are not token ids (negative, fractional, past the vocabulary it states), log-probabilities
 * that are not log-probabilities (positive, not finite), lengths that disagree, a prompt longer than
 * any context. Sending the same request again cannot help: a rescue's slot fails at once.
 */
export class PolicyReplyInvalidError extends HarnessSError<AdaptersErrorCode> {
  constructor(detail: string) {
    super("POLICY_REPLY_INVALID", detail);
  }
}

/**
 * A caller's environment failed an episode: it closed, refused, timed out, or answered outside the OpenEnv protocol.
 */
export class EnvironmentError extends HarnessSError<AdaptersErrorCode> {
  constructor(detail: string, options?: { cause?: unknown }) {
    super("ENVIRONMENT_FAILED", detail, options);
  }
}

/**
 * A URL a caller gave that this service will not connect to: not http(s), credentials in it, or
 * a host that resolves (now, or at the moment of connecting) to an address of a refused range
 * (loopback, private, link-local, …: see `forbiddenRange`). `reason` names which.
 */
export class UrlNotAllowedError extends HarnessSError<AdaptersErrorCode> {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super("URL_NOT_ALLOWED", `${url}: ${reason}`);
  }
}

/**
 * A caller's endpoint did not answer its registration's probe as its kind must (why is in the message; its own error
 * text is not relayed).
 */
export class EndpointProbeError extends HarnessSError<AdaptersErrorCode> {
  constructor(
    detail: string,
    code:
      | "ENDPOINT_PROBE_FAILED"
      | "ENDPOINT_NO_TOKEN_IDS"
      | "ENDPOINT_ROUTE_MISSING"
      | "SERVED_MODEL_MISMATCH" = "ENDPOINT_PROBE_FAILED",
  ) {
    super(code, detail);
  }
}

/**
 * A vLLM, SGLang or OpenAI-compatible server offers none of its kind's token-exact modes (tokens
 * in through its `/tokenize` and an id-prompt sampler, or messages in with prompt and completion
 * ids): what each mode's probe got is in the message. Ids re-tokenised from text would not be the
 * ones sampled, so such a server is not registered.
 */
export class EndpointNotTokenExactError extends HarnessSError<AdaptersErrorCode> {
  constructor(detail: string) {
    super("ENDPOINT_NOT_TOKEN_EXACT", detail);
  }
}

/**
 * A reply came from another model than the one the rescue pinned (`servedModel`, the name that
 * carries its weight version), or the server no longer serves that name (404): the slot fails, so
 * a rescue's rows never mix versions.
 */
export class ServedModelMismatchError extends HarnessSError<AdaptersErrorCode> {
  constructor(detail: string) {
    super("SERVED_MODEL_MISMATCH", detail);
  }
}

/**
 * The server has no such route: FastAPI's own 404 (`{"detail": "Not Found"}`), as an older vLLM answers
 * `/inference/v1/generate` — never read as a model it does not serve.
 */
export class EndpointRouteMissingError extends HarnessSError<AdaptersErrorCode> {
  constructor(detail: string) {
    super("ENDPOINT_ROUTE_MISSING", detail);
  }
}

/** Turns an AWS SDK error into a domain error; domain errors pass through. */
export function translateAwsError(err: unknown, what: string): HarnessSError {
  if (err instanceof HarnessSError) return err;
  const name = (err as { name?: string })?.name ?? "Error";
  if (name === "ConditionalCheckFailedException" || name === "TransactionCanceledException") {
    return new ConflictError(`${what}: a conflicting write exists`);
  }
  return new StoreUnavailableError(`${what} failed (${name})`, { cause: err });
}

/** Runs an SDK call, translating its errors. */
export async function aws<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw translateAwsError(err, what);
  }
}
