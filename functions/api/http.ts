import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { validator } from "hono/validator";
import { HarnessSError, ValidationError, formatIssues } from "@harness-s/core";
import { PartialSendError } from "@harness-s/core/messaging";
import { RateLimitedError } from "@harness-s/core/access";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { UpstreamRejectedError } from "@harness-s/core/gateway";
import type { ApiKeyRecord } from "@harness-s/core/access";
import type { Usage } from "@harness-s/core/billing";
import { UnsupportedMediaTypeError, statusOf } from "./errors.ts";

/*
 * The API's edge: what a request carries between middleware (functions/api/middleware/) and
 * handlers, the router every resource's routes are made on, and the one error mapping.
 */

/** The API's Hono environment: what a request carries between middleware and handlers. */
export type ApiEnv = {
  Variables: {
    /** The request's key, once a scope check (`requireScope`) or `authenticated` has found it. */
    key?: ApiKeyRecord;
    /** The key a request is metered to, once it is authorised. */
    meteredKey?: ApiKeyRecord;
    /** What the request used so far (ballots, tokens, cost), metered with it when it ends. */
    used?: Partial<Usage>;
    /** The job the request started, whose bill counts what the request used too. */
    usedFor?: string;
  };
};

/**
 * The hook of every validator a route declares (`request: { query, params }` with a zod type): its
 * failure is a {@link ValidationError}, answered in the one envelope by {@link errorResponse}, never
 * the validator's own `{ success: false, error: ZodError }`. A path parameter's error names it
 * (`parameter id`), a query's the query.
 */
export function validationHook(result: {
  success: boolean;
  target: string;
  error?: { issues: readonly { path: readonly PropertyKey[]; message: string }[] };
}): void {
  if (result.success) return;
  const issues = result.error?.issues ?? [];
  const what =
    result.target === "param"
      ? `parameter ${[...new Set(issues.map((i) => String(i.path[0])))].join(", ")}`
      : result.target;
  throw new ValidationError(what, formatIssues(issues));
}

/**
 * A router of the API: its validators' failures go through {@link validationHook} (the app and every resource's routes
 * are made here).
 */
export const apiRouter = () => new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });

/**
 * A route with the middleware only it runs, in order, before its handler (a body read, a scope
 * that depends on the body); the handler's context carries what each one sets. Its path
 * parameters are checked before them (a bad id is a 400 before a body is read).
 */
export function withMiddleware<R extends RouteConfig, const M extends MiddlewareHandler[]>(
  route: R,
  ...middleware: M
): R & { middleware: M } {
  const params = route.request?.params;
  const checkParams = validator("param", (value) => {
    const parsed = params!.safeParse(value);
    validationHook({ ...parsed, target: "param" });
    return parsed.data;
  });
  return { ...route, middleware: (params ? [checkParams, ...middleware] : middleware) as M };
}

/**
 * Hono's own refusals (its validators read a JSON body or a content type before any hook runs), as
 * the error they are; any other is a bug, a 500.
 */
const HTTP_EXCEPTIONS: Partial<Record<number, (err: HTTPException, c: Context) => HarnessSError<string>>> = {
  400: (err) => new ValidationError("request", [err.message]),
  415: (_err, c) => new UnsupportedMediaTypeError(c.req.header("content-type")),
};

/**
 * The one place where domain errors become HTTP responses (the app's `onError`), with the status
 * of each code from `ERROR_STATUS`. A store's failure is logged with its cause and answered with
 * a generic message: no backend exception name reaches the caller.
 */
export function errorResponse(err: unknown, c: Context): Response {
  if (err instanceof HTTPException && HTTP_EXCEPTIONS[err.status])
    return errorResponse(HTTP_EXCEPTIONS[err.status]!(err, c), c);
  if (err instanceof HarnessSError) {
    const status = statusOf(err.code);
    if (status >= 500 || err instanceof UpstreamRejectedError) console.error(err);
    const message =
      err.code === "STORE_UNAVAILABLE"
        ? "a backing store is unavailable; retry later"
        : status === 500
          ? "internal error"
          : err.message;
    const body: Record<string, unknown> = { code: status === 500 ? "INTERNAL" : err.code, message };
    if (err instanceof ValidationError) body.issues = err.issues;
    if (err instanceof PartialSendError)
      Object.assign(body, { queued: err.queued, notQueued: err.notQueued, ...err.context });
    if (err instanceof StalePolicyVersionError)
      Object.assign(body, { heldVersion: err.held, wantedVersion: err.wanted });
    if (err instanceof RateLimitedError) c.header("Retry-After", String(err.retryAfterSeconds));
    return c.json({ error: body }, status as 400);
  }
  console.error(err);
  return c.json({ error: { code: "INTERNAL", message: "internal error" } }, 500);
}
