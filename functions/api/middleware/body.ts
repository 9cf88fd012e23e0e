import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { PayloadTooLargeError, STORABLE_NUMBER, ValidationError, formatIssues, storable } from "@harness-s/core";
import type { ApiDeps } from "../deps.ts";
import { UnsupportedMediaTypeError } from "../errors.ts";
import { BODY_TIMEOUTS, type BodyTimeouts, MAX_JSON_DEPTH } from "../request-limits.ts";
import { readLimited } from "./read-limited.ts";

/** What a route's handler finds once its body is read: `c.var.body`. */
export type BodyEnv<T> = { Variables: { body: T } };

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * A route's body reader (`withMiddleware(route, readBody(deps, Schema))`), run after the router's
 * scope check and before the handler, which finds the body as `c.var.body`: 415 unless it is sent
 * as application/json (UTF-8), 413 past `maxBytes` (the API's `maxBodyBytes` unless the route has
 * its own; declared or counted as it arrives: an oversized body is never held whole), 408 when it
 * stalls or is slow ({@link BODY_TIMEOUTS}); then parsed, refused when nested deeper than
 * {@link MAX_JSON_DEPTH}, holding a `__proto__` key or a number no store can hold
 * ({@link STORABLE_NUMBER}), and validated with `schema`; every failure is a 400 naming the bad fields.
 */
export function readBody<S extends z.ZodType>(
  deps: Pick<ApiDeps, "maxBodyBytes" | "bodyTimeouts">,
  schema: S,
  maxBytes: () => number = () => deps.maxBodyBytes,
): MiddlewareHandler<BodyEnv<z.infer<S>>> {
  return async (c, next) => {
    c.set("body", await parseBody(c, schema, maxBytes(), deps.bodyTimeouts));
    await next();
  };
}

async function parseBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  maxBytes: number,
  timeouts: BodyTimeouts = BODY_TIMEOUTS,
): Promise<z.infer<S>> {
  const type = c.req.header("content-type");
  if (!type || !JSON_TYPE.test(type)) throw new UnsupportedMediaTypeError(type);
  const declared = Number(c.req.header("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw new PayloadTooLargeError(maxBytes);
  const text = await readLimited(c, maxBytes, timeouts);
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
 * What no body may hold, whatever its schema: nesting deeper than `max`, an own `__proto__`
 * key (JSON.parse makes one; a schema's record would drop it silently), or a number no store can
 * hold (1e16, 1e-320: DynamoDB's range and the SDK's exact integers). Iterative, so a hostile
 * body cannot overflow the stack.
 */
function shapeIssue(value: unknown, max: number): string | undefined {
  const stack: [unknown, number, string][] = [[value, 0, "(root)"]];
  while (stack.length > 0) {
    const [v, d, path] = stack.pop()!;
    if (typeof v === "number" && !storable(v))
      return `${path}: ${v} is outside the numbers this service stores (0, or ${STORABLE_NUMBER.minMagnitude} to ${STORABLE_NUMBER.maxMagnitude} in magnitude)`;
    if (v === null || typeof v !== "object") continue;
    if (d >= max) return `(root): nested deeper than ${max} levels`;
    if (!Array.isArray(v) && Object.hasOwn(v, "__proto__"))
      return `${path === "(root)" ? "" : `${path}.`}__proto__: not an allowed key`;
    for (const [k, child] of Object.entries(v)) stack.push([child, d + 1, path === "(root)" ? k : `${path}.${k}`]);
  }
  return undefined;
}
