import type { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { NotFoundError } from "@harness-s/core";
import { RateLimitedError } from "@harness-s/core/access";
import { KeyRateLimiter } from "@harness-s/core/access";
import { consoleApp } from "./console.ts";
import type { ApiDeps } from "./deps.ts";
import { apiRouter, errorResponse, type ApiEnv } from "./http.ts";
import { meterRequest } from "./middleware/metering.ts";
import { observeRequests } from "./middleware/request-log.ts";
import { limitUrl } from "./middleware/url.ts";
import { documentOf } from "./openapi.ts";
import { RATE_LIMIT_HOLD_MS } from "./request-limits.ts";
import { mountAccount } from "./routes/account.ts";
import { decisionsApp } from "./routes/decisions.ts";
import { experimentsApp } from "./routes/experiments.ts";
import { gatewayApp, gatewayBodyBytes } from "./routes/gateway.ts";
import { policyEndpointsApp } from "./routes/policy-endpoints.ts";
import { keysApp } from "./routes/keys.ts";
import { metricsApp } from "./routes/metrics.ts";
import { modelsApp } from "./routes/models.ts";
import { poolsApp } from "./routes/pools.ts";
import { profilesApp } from "./routes/profiles.ts";
import { quotesApp } from "./routes/quotes.ts";
import { rescuesApp } from "./routes/rescues.ts";
import { routeApp } from "./routes/route.ts";

/**
 * The router API: each resource's routes, handlers and response schemas live in `routes/<resource>.ts`
 * (each router checks its scope as middleware, a route's body is read by middleware, its
 * parameters by its validators; handlers only call one use-case and map the result); this mounts
 * them, with the URL limit, metering and the one error mapping (`errorResponse`, a path or method
 * no route has included) as the app's own middleware and error handler.
 *
 * @example
 * serve({ fetch: createApp(deps).fetch, port: 18787 });
 */
export function createApp(given: ApiDeps, servers?: { url: string; description?: string }[]): OpenAPIHono<ApiEnv> {
  // Each instance of the app holds its keys' rate buckets.
  const deps: ApiDeps = { ...given, rate: given.rate ?? new KeyRateLimiter(given.clock) };
  const app = apiRouter();
  app.use(noSniff());
  app.use(observeRequests(deps));
  app.use(limitUrl());
  app.use(meterRequest(deps));
  if (deps.console) app.route("/", consoleApp(deps.console));
  if (deps.observability?.metrics) app.route("/metrics", metricsApp(deps, deps.observability.metrics));
  const routes = () => app.openAPIRegistry.definitions.flatMap((d) => (d.type === "route" ? [d.route] : []));
  // Made at the first ask, once every route is mounted, and kept: generating it is most of what the answer costs.
  let document: ReturnType<typeof documentOf> | undefined;
  const documentOnce = () => {
    document ??= documentOf(routes(), servers);
    return document;
  };
  mountAccount(app, deps, documentOnce as never)
    .route("/v1/route", routeApp(deps))
    .route("/v1/pools", poolsApp(deps))
    .route("/v1/profiles", profilesApp(deps))
    .route("/v1/decisions", decisionsApp(deps))
    .route("/v1/rescues", rescuesApp(deps))
    .route("/v1/policy-endpoints", policyEndpointsApp(deps))
    .route("/v1/experiments", experimentsApp(deps))
    .route("/v1/models", modelsApp(deps))
    .route("/v1/quotes", quotesApp(deps))
    .route("/v1/gateway", gatewayApp(deps))
    .route("/v1/keys", keysApp(deps))
    .onError(async (err, c) => errorResponse(await heldIfRateLimited(err), c))
    .notFound((c) => errorResponse(new NotFoundError("route", `${c.req.method} ${c.req.path}`), c));
  return app;
}

/**
 * Every answer says its content type is the one to use (`X-Content-Type-Options: nosniff`): a JSON error is never read
 * as a page or a script.
 */
function noSniff(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    c.res.headers.set("x-content-type-options", "nosniff");
  };
}

/**
 * A request past its key's rate, answered after {@link RATE_LIMIT_HOLD_MS} at most (its Retry-After counted from then);
 * any other error at once.
 */
async function heldIfRateLimited(err: unknown): Promise<unknown> {
  if (!(err instanceof RateLimitedError)) return err;
  const hold = Math.min(err.waitMs, RATE_LIMIT_HOLD_MS);
  await new Promise((resolve) => setTimeout(resolve, hold));
  return new RateLimitedError(err.perSecond, err.waitMs - hold);
}

/**
 * The largest body each path takes: the gateway's conversations their own limit, every other
 * route the API's. The listener reads it to refuse an `Expect: 100-continue` body before it is sent.
 *
 * @example
 * await listen(createApp(deps).fetch, 18787, "127.0.0.1", { bodyLimit: bodyLimitOf(deps) });
 */
export function bodyLimitOf(deps: Pick<ApiDeps, "maxBodyBytes" | "gateway">): (path: string) => number {
  const gateway = deps.gateway ? gatewayBodyBytes(deps.gateway) : deps.maxBodyBytes;
  return (path) => (path.startsWith("/v1/gateway/chat/") ? gateway : deps.maxBodyBytes);
}
