import type { Context } from "hono";

/** The API's Hono environment: what a request carries between middleware and handlers. */
export type ApiEnv = {
  Variables: {
    /** The key a request is metered to, once it is authorised. */
    meteredKey?: string;
  };
};
import type { z } from "zod";
import {
  type CoreErrorCode,
  HarnessSError,
  Id,
  PartialSendError,
  PayloadTooLargeError,
  UriTooLongError,
  ValidationError,
  authorize,
  formatIssues,
  type Scope,
} from "@harness-s/core";
import type { ApiDeps } from "./deps.ts";
import type { AdaptersErrorCode } from "@harness-s/adapters";
import type { DbbenchErrorCode } from "@harness-s/dbbench";

/** Deepest JSON nesting a body may have (arrays and objects); deeper bodies are refused with 400. */
export const MAX_JSON_DEPTH = 32;
/** Longest accepted request URL (path and query), in characters; longer ones get 414. */
export const MAX_URL_CHARS = 4096;

/**
 * Reads the body as a stream and stops at `maxBytes` (413: an oversized body is never held
 * whole), then parses JSON, refuses nesting deeper than {@link MAX_JSON_DEPTH} and validates it
 * with `schema`; every failure becomes a 400 naming the bad fields.
 */
export async function parseBody<S extends z.ZodType>(c: Context, schema: S, maxBytes: number): Promise<z.infer<S>> {
  const declared = Number(c.req.header("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw new PayloadTooLargeError(maxBytes);
  // A declared length within the limit bounds what the HTTP parser reads (a longer body is not
  // this request's); only a body of unknown length (chunked) is read as a counted stream.
  const text = Number.isFinite(declared) ? await c.req.text() : await readLimited(c.req.raw, maxBytes);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ValidationError("request body", ["(root): not valid JSON"]);
  }
  if (depthOver(json, MAX_JSON_DEPTH)) throw new ValidationError("request body", [`(root): nested deeper than ${MAX_JSON_DEPTH} levels`]);
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new ValidationError("request body", formatIssues(parsed.error.issues));
  return parsed.data;
}

/** A body of unknown length, counted as it arrives and cut at `maxBytes`. */
async function readLimited(req: Request, maxBytes: number): Promise<string> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new PayloadTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Whether `value` nests deeper than `max` (iterative: a hostile body cannot overflow the stack). */
function depthOver(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (d >= max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return false;
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
  c.set("meteredKey", key.id);
  return key;
}

/** Meters each authorised request's compute time (ms in the handler) to its key, for pay-per-use. */
export function meterCompute(deps: ApiDeps) {
  return async (c: Context<ApiEnv>, next: () => Promise<void>) => {
    const started = performance.now();
    await next();
    const keyId = c.get("meteredKey");
    if (keyId) await deps.meter.add(keyId, { computeMs: performance.now() - started }).catch((err) => console.warn(`compute metering for ${keyId} failed: ${String(err)}`));
  };
}

/** Every error code of every package the API runs, and what HTTP says for it (exhaustive by type). */
export type ErrorCode = CoreErrorCode | AdaptersErrorCode | DbbenchErrorCode;
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  BUDGET_EXCEEDED: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  STALE_POLICY_VERSION: 409,
  EXPERIMENT_CANCELLED: 409,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  QUOTA_EXCEEDED: 429,
  CONCURRENCY_LIMIT: 429,
  NOT_CONFIGURED: 501,
  INVALID_BALLOT: 502,
  POLICY_ENDPOINT_FAILED: 502,
  QUORUM_NOT_MET: 503,
  STORE_UNAVAILABLE: 503,
  PARTIAL_SEND: 503,
  SQL_SERVER_UNAVAILABLE: 503,
  VOTER_TIMEOUT: 504,
  ROLLOUT_TIMEOUT: 504,
} as const satisfies Record<ErrorCode, number>;

/** The status of a code; one no package declares (a bug) is a 500. */
export function statusOf(code: string): number {
  return Object.hasOwn(ERROR_STATUS, code) ? ERROR_STATUS[code as ErrorCode] : 500;
}

/**
 * The one place where domain errors become HTTP responses. A store's failure is logged with its
 * cause and answered with a generic message: no backend exception name reaches the caller.
 */
export function errorResponse(err: unknown, c: Context): Response {
  if (err instanceof HarnessSError) {
    const status = statusOf(err.code);
    if (status >= 500) console.error(err);
    const message = err.code === "STORE_UNAVAILABLE" ? "a backing store is unavailable; retry later" : status === 500 ? "internal error" : err.message;
    const body: Record<string, unknown> = { code: status === 500 ? "INTERNAL" : err.code, message };
    if (err instanceof ValidationError) body.issues = err.issues;
    if (err instanceof PartialSendError) Object.assign(body, { queued: err.queued, notQueued: err.notQueued, ...err.context });
    return c.json({ error: body }, status as 400);
  }
  console.error(err);
  return c.json({ error: { code: "INTERNAL", message: "internal error" } }, 500);
}
