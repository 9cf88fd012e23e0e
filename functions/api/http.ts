import { Readable } from "node:stream";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ApiKeyRecord } from "@harness-s/core/access";
import type { CostUsage, Usage } from "@harness-s/core/billing";

/** The API's Hono environment: what a request carries between middleware and handlers. */
export type ApiEnv = {
  Variables: {
    /** The key a request is metered to, once it is authorised. */
    meteredKey?: ApiKeyRecord;
    /** What the request used so far (ballots, tokens, cost), metered with it when it ends. */
    used?: Partial<Usage>;
  };
};
import type { z } from "zod";
import { BackloggedMeter, mergeUsage } from "@harness-s/core/billing";
import { type CoreErrorCode, HarnessSError, Id, PartialSendError, PayloadTooLargeError, UpstreamRejectedError, ValidationError, formatIssues } from "@harness-s/core";
import { authorize, requestUsage, type Scope } from "@harness-s/core/access";
import type { ApiDeps } from "./deps.ts";
import type { AdaptersErrorCode } from "@harness-s/adapters";
import type { DbbenchErrorCode } from "@harness-s/dbbench";
import { RequestTimeoutError, type TransportErrorCode, UnsupportedMediaTypeError, UriTooLongError } from "./errors.ts";
import { BODY_TIMEOUTS, type BodyTimeouts, MAX_JSON_DEPTH, MAX_URL_CHARS } from "./request-limits.ts";

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * Reads a JSON body: 415 unless it is sent as application/json (UTF-8), 413 past `maxBytes`
 * (declared or counted as it arrives: an oversized body is never held whole), 408 when it stalls
 * or is slow ({@link BODY_TIMEOUTS}); then parses it, refuses nesting deeper than
 * {@link MAX_JSON_DEPTH} and `__proto__` keys, and validates it with `schema`; every failure
 * becomes a 400 naming the bad fields.
 */
export async function parseBody<S extends z.ZodType>(c: Context, schema: S, maxBytes: number, timeouts: BodyTimeouts = BODY_TIMEOUTS): Promise<z.infer<S>> {
  const type = c.req.header("content-type");
  if (!type || !JSON_TYPE.test(type)) throw new UnsupportedMediaTypeError(type);
  const declared = Number(c.req.header("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw new PayloadTooLargeError(maxBytes);
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  const text = incoming instanceof Readable ? await readNodeLimited(incoming, maxBytes, timeouts) : await readLimited(c.req.raw, maxBytes, timeouts);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ValidationError("request body", ["(root): not valid JSON"]);
  }
  const shape = shapeIssue(json, MAX_JSON_DEPTH);
  if (shape) throw new ValidationError("request body", [shape]);
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new ValidationError("request body", formatIssues(parsed.error.issues));
  return parsed.data;
}

/**
 * The same limits read straight from Node's request stream (`@hono/node-server` passes it as
 * `c.env.incoming`): asking Hono's request for its web-stream body would build a whole fetch
 * Request per call, which cost more than the rest of a `/v1/route` request together.
 */
function readNodeLimited(incoming: Readable, maxBytes: number, timeouts: BodyTimeouts): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let idle: ReturnType<typeof setTimeout> | undefined;
    const done = (err?: Error) => {
      clearTimeout(idle);
      clearTimeout(deadline);
      incoming.off("data", onData).off("end", onEnd).off("error", done).off("aborted", onAborted);
      if (err) {
        incoming.pause();
        reject(err);
      } else resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => done(new RequestTimeoutError(`the request body stalled for ${timeouts.idleMs} ms`)), timeouts.idleMs);
    };
    const deadline = setTimeout(() => done(new RequestTimeoutError(`the request body took longer than ${timeouts.deadlineMs} ms`)), timeouts.deadlineMs);
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > maxBytes) return done(new PayloadTooLargeError(maxBytes));
      chunks.push(chunk);
      arm();
    };
    const onEnd = () => done();
    const onAborted = () => done(new RequestTimeoutError("the client closed the connection before the body arrived"));
    if (incoming.readableEnded) return done();
    incoming.on("data", onData).on("end", onEnd).on("error", done).on("aborted", onAborted);
    arm();
  });
}

/** The body, counted as it arrives and cut at `maxBytes`, given up when it stalls or runs past the deadline. */
async function readLimited(req: Request, maxBytes: number, timeouts: BodyTimeouts): Promise<string> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  const deadline = Date.now() + timeouts.deadlineMs;
  let total = 0;
  const fail = async (err: Error): Promise<never> => {
    await reader.cancel().catch(() => undefined);
    throw err;
  };
  for (;;) {
    const left = deadline - Date.now();
    const wait = Math.min(timeouts.idleMs, left);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<"stalled">((resolve) => {
      timer = setTimeout(() => resolve("stalled"), Math.max(0, wait));
    });
    const next = await Promise.race([reader.read(), stalled]).finally(() => clearTimeout(timer));
    if (next === "stalled")
      return fail(
        new RequestTimeoutError(wait < timeouts.idleMs ? `the request body took longer than ${timeouts.deadlineMs} ms` : `the request body stalled for ${timeouts.idleMs} ms`),
      );
    if (next.done) break;
    total += next.value.byteLength;
    if (total > maxBytes) return fail(new PayloadTooLargeError(maxBytes));
    chunks.push(next.value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * What no body may hold, whatever its schema: nesting deeper than `max`, or an own `__proto__`
 * key (JSON.parse makes one; a schema's record would drop it silently). Iterative, so a hostile
 * body cannot overflow the stack.
 */
function shapeIssue(value: unknown, max: number): string | undefined {
  const stack: [unknown, number, string][] = [[value, 0, "(root)"]];
  while (stack.length > 0) {
    const [v, d, path] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (d >= max) return `(root): nested deeper than ${max} levels`;
    if (!Array.isArray(v) && Object.hasOwn(v, "__proto__")) return `${path === "(root)" ? "" : `${path}.`}__proto__: not an allowed key`;
    for (const [k, child] of Object.entries(v)) stack.push([child, d + 1, path === "(root)" ? k : `${path}.${k}`]);
  }
  return undefined;
}

/**
 * The hook of every validator a route attaches (`request: { query, params, … }` with a zod type):
 * its failure is a {@link ValidationError}, answered in the one envelope by {@link errorResponse},
 * never the validator's own `{ success: false, error: ZodError }`.
 */
export function validationHook(result: { success: boolean; target: string; error?: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } }): void {
  if (!result.success) throw new ValidationError(result.target === "param" ? "path parameters" : result.target, formatIssues(result.error?.issues ?? []));
}

/** A router of the API: its validators' failures go through {@link validationHook} (the app and every resource's routes are made here). */
export const apiRouter = () => new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });

/** Query parameters parsed with `schema`: a 400 naming each bad parameter otherwise. */
export function parseQuery<S extends z.ZodType>(schema: S, query: Record<string, string>): z.infer<S> {
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw new ValidationError("query", formatIssues(parsed.error.issues));
  return parsed.data;
}

/** A path or query parameter that must be an {@link Id}: 400 otherwise (never a store error). */
export function idParam(c: Context, name: string, value: string | undefined = c.req.param(name)): string {
  const parsed = Id.safeParse(value);
  if (!parsed.success)
    throw new ValidationError(
      `parameter ${name}`,
      formatIssues(parsed.error.issues).map((i) => i.replace(/^\(root\)/, name)),
    );
  return parsed.data;
}

/** 414 for URLs longer than {@link MAX_URL_CHARS}, before any handler runs. */
export function limitUrl() {
  return async (c: Context, next: () => Promise<void>) => {
    if (c.req.url.length > MAX_URL_CHARS) throw new UriTooLongError(MAX_URL_CHARS);
    await next();
  };
}

export async function requireScope(c: Context<ApiEnv>, scope: Scope, deps: ApiDeps) {
  const key = await authorize(c.req.header("authorization"), scope, deps);
  c.set("meteredKey", key);
  return key;
}

/** Adds to what this request is metered for when it ends (ballots, LLM tokens and cost). */
export function addUsage(c: Context<ApiEnv>, used: Partial<Usage>): void {
  c.set("used", mergeUsage(c.get("used"), used));
}

/**
 * Meters each authorised request in one write when it ends, failed or not: the request (unless a
 * quota already counted it), what the handler used, its compute time (ms in the handler) and,
 * with `deps.consumption`, its cost of goods (GB-seconds, DynamoDB units, SQS requests).
 * Usage is bounded before it is written; a write that fails is tried once more, then kept and
 * sent with the key's next write (`BackloggedMeter`), and logged with what is owed: never dropped.
 */
export function meterRequest(deps: ApiDeps) {
  const meter = new BackloggedMeter(deps.meter, (line) => console.error(line));
  return async (c: Context<ApiEnv>, next: () => Promise<void>) => {
    const started = performance.now();
    const consumed: CostUsage = {};
    try {
      await (deps.consumption ? deps.consumption.meter.within(consumed, next) : next());
    } finally {
      const key = c.get("meteredKey");
      if (key) {
        const computeMs = performance.now() - started;
        const lambdaGbSeconds = deps.consumption ? (computeMs / 1000) * deps.consumption.memoryGb : 0;
        const usage = requestUsage(key, mergeUsage(c.get("used"), { ...consumed, computeMs, lambdaGbSeconds }));
        await meter.add(key.id, usage).catch(() => deps.clock.sleep(METER_RETRY_MS).then(() => meter.add(key.id, {}).catch(() => undefined)));
      }
    }
  };
}

/** How long a failed usage write waits before its one retry within the request. */
export const METER_RETRY_MS = 100;

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
  EPISODE_CLOSED: 410,
  UPSTREAM_FAILED: 502,
  UPSTREAM_REJECTED: 400,
} as const satisfies Record<ErrorCode, number>;

/**
 * Hono's own refusals (its validators read a JSON body or a content type before any hook runs), as
 * the error they are; any other is a bug, a 500.
 */
const HTTP_EXCEPTIONS: Partial<Record<number, (err: HTTPException, c: Context) => HarnessSError<string>>> = {
  400: (err) => new ValidationError("request", [err.message]),
  415: (_err, c) => new UnsupportedMediaTypeError(c.req.header("content-type")),
};

/** The status of a code; one no package declares (a bug) is a 500. */
export function statusOf(code: string): number {
  return Object.hasOwn(ERROR_STATUS, code) ? ERROR_STATUS[code as ErrorCode] : 500;
}

/**
 * The one place where domain errors become HTTP responses. A store's failure is logged with its
 * cause and answered with a generic message: no backend exception name reaches the caller.
 */
export function errorResponse(err: unknown, c: Context): Response {
  if (err instanceof HTTPException && HTTP_EXCEPTIONS[err.status]) return errorResponse(HTTP_EXCEPTIONS[err.status]!(err, c), c);
  if (err instanceof HarnessSError) {
    const status = statusOf(err.code);
    if (status >= 500 || err instanceof UpstreamRejectedError) console.error(err);
    const message = err.code === "STORE_UNAVAILABLE" ? "a backing store is unavailable; retry later" : status === 500 ? "internal error" : err.message;
    const body: Record<string, unknown> = { code: status === 500 ? "INTERNAL" : err.code, message };
    if (err instanceof ValidationError) body.issues = err.issues;
    if (err instanceof PartialSendError) Object.assign(body, { queued: err.queued, notQueued: err.notQueued, ...err.context });
    return c.json({ error: body }, status as 400);
  }
  console.error(err);
  return c.json({ error: { code: "INTERNAL", message: "internal error" } }, 500);
}
