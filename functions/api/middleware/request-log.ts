import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { METHOD_NAME_ALL } from "hono/router";
import { ForbiddenError } from "@harness-s/core";
import { correlationIdOf, withCorrelationId } from "@harness-s/core/observability";
import type { ApiDeps } from "../deps.ts";
import type { ApiEnv } from "../http.ts";

/** The header a request may name its correlation id in, and every response names it in. */
export const REQUEST_ID_HEADER = "x-request-id";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * The pattern of the route that answered (`/v1/rescues/:id`), never the path as sent; `unmatched` when no route did.
 */
export function routeOf(c: Context): string {
  return (
    matchedRoutes(c)
      .filter((r) => r.method !== METHOD_NAME_ALL)
      .at(-1)?.path ?? "unmatched"
  );
}

/** The code of the error envelope a 4xx or 5xx answered with (what the caller read), if any. */
async function errorCodeOf(res: Response): Promise<string | undefined> {
  if (res.status < 400 || !res.headers.get("content-type")?.includes("application/json")) return undefined;
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as { error?: { code?: unknown } } | undefined;
  return typeof body?.error?.code === "string" ? body.error.code : undefined;
}

/**
 * Every request runs under a correlation id (a valid `traceparent`'s trace id or `x-request-id`,
 * else a fresh one): every queue message it sends carries it, and its response names it in
 * `x-request-id`. When it ends, failed or not, one `http.request` event says who (key id, never
 * the secret; a key refused its scope is named too), what (method, route pattern), and how (status, ms, the error code
 * answered).
 */
export function observeRequests(deps: Pick<ApiDeps, "observability">): MiddlewareHandler<ApiEnv> {
  const events = deps.observability?.events;
  return async (c, next) => {
    const began = performance.now();
    const correlationId = correlationIdOf({
      traceparent: c.req.header("traceparent"),
      requestId: c.req.header(REQUEST_ID_HEADER),
    });
    try {
      await withCorrelationId(correlationId, next);
    } finally {
      c.header(REQUEST_ID_HEADER, correlationId);
      if (events) {
        const status = c.res.status;
        events.event({
          event: "http.request",
          level: status >= 500 ? "error" : "info",
          correlationId,
          keyId: c.get("key")?.id ?? (c.error instanceof ForbiddenError ? c.error.keyId : undefined),
          method: METHODS.has(c.req.method) ? c.req.method : "OTHER",
          route: routeOf(c),
          status,
          ms: Math.round(performance.now() - began),
          errorCode: await errorCodeOf(c.res),
        });
      }
    }
  };
}
