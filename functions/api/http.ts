import type { Context } from "hono";
import type { z } from "zod";
import { HarnessSError, ValidationError, authorize, formatIssues, type Scope } from "@harness-s/core";
import type { ApiDeps } from "./deps.ts";

/** Reads and validates a JSON body: malformed, oversized or invalid bodies become a ValidationError. */
export async function parseBody<S extends z.ZodType>(c: Context, schema: S, maxBytes: number): Promise<z.infer<S>> {
  const text = await c.req.text();
  if (Buffer.byteLength(text) > maxBytes) throw new ValidationError("request body", [`(root): body exceeds ${maxBytes} bytes`]);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ValidationError("request body", ["(root): not valid JSON"]);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new ValidationError("request body", formatIssues(parsed.error.issues));
  return parsed.data;
}

export async function requireScope(c: Context, scope: Scope, deps: ApiDeps) {
  const key = await authorize(c.req.header("authorization"), scope, deps);
  c.set("meteredKey" as never, key.id as never);
  return key;
}

/** Meters each authorised request's compute time (ms in the handler) to its key, for pay-per-use. */
export function meterCompute(deps: ApiDeps) {
  return async (c: Context, next: () => Promise<void>) => {
    const started = performance.now();
    await next();
    const keyId = c.get("meteredKey" as never) as string | undefined;
    if (keyId) await deps.meter.add(keyId, { computeMs: performance.now() - started }).catch(() => undefined);
  };
}

const STATUS: Record<string, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  QUOTA_EXCEEDED: 429,
  QUORUM_NOT_MET: 503,
  STORE_UNAVAILABLE: 503,
  NOT_CONFIGURED: 501,
};

/** The one place where domain errors become HTTP responses. */
export function errorResponse(err: unknown, c: Context): Response {
  if (err instanceof HarnessSError) {
    const status = STATUS[err.code] ?? 500;
    const body: Record<string, unknown> = { code: err.code, message: err.message };
    if (err instanceof ValidationError) body.issues = err.issues;
    return c.json({ error: body }, status as 400);
  }
  console.error(err);
  return c.json({ error: { code: "INTERNAL", message: "internal error" } }, 500);
}
