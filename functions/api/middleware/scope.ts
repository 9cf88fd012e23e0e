import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { METHOD_NAME_ALL } from "hono/router";
import { type ApiKeyRecord, type Scope, admit, authenticate, authorize } from "@harness-s/core/access";
import { ForbiddenError } from "@harness-s/core";
import type { ApiDeps } from "../deps.ts";

/** What a handler finds once its request's key is known: `c.var.key`. */
export type KeyEnv = { Variables: { key: ApiKeyRecord; meteredKey?: ApiKeyRecord } };

/**
 * A router's scope check (`router.use(requireScope(deps, "rescues"))`), before any body is read
 * or any work is done: 401 without a known key, 403 without the scope, 429 past the key's request
 * quota. The key is then `c.var.key`, and the request is metered to it when it ends, failed or not
 * (`meterRequest`). `scope` may depend on the request (a read or a write; what a quote's body asks).
 * A request no route of the router answers (an unknown path or method) passes on, unchecked and
 * unmetered, to the app's 404.
 */
export function requireScope(
  deps: Pick<ApiDeps, "keys" | "meter" | "clock" | "rate">,
  scope: Scope | ((c: Context) => Scope),
): MiddlewareHandler<KeyEnv> {
  return async (c, next) => {
    if (!answered(c)) return next();
    const key = await authorize(c.req.header("authorization"), typeof scope === "function" ? scope(c) : scope, deps);
    c.set("key", key);
    c.set("meteredKey", key);
    await next();
  };
}

/**
 * {@link requireScope} for a route whose body says which of `scopes` it needs (`POST /v1/pools`:
 * a pool put as it is, or an evolution): the key must hold one of them before the body is read;
 * the handler checks the one its body needs ({@link ensureScope}).
 */
export function requireAnyScope(
  deps: Pick<ApiDeps, "keys" | "meter" | "clock" | "rate">,
  scopes: readonly [Scope, ...Scope[]],
): MiddlewareHandler<KeyEnv> {
  return async (c, next) => {
    if (!answered(c)) return next();
    const known = await authenticate(c.req.header("authorization"), deps.keys, deps.clock);
    const key = await authorize(
      c.req.header("authorization"),
      scopes.find((s) => known.scopes.includes(s)) ?? scopes[0],
      deps,
    );
    c.set("key", key);
    c.set("meteredKey", key);
    await next();
  };
}

/** A 403 unless `key` holds `scope` (or is an admin key). */
export function ensureScope(key: ApiKeyRecord, scope: Scope): void {
  if (!key.scopes.includes(scope) && !key.scopes.includes("admin")) throw new ForbiddenError(scope, key.id);
}

/** Whether a route, not only middleware, matched the request. */
const answered = (c: Context) => matchedRoutes(c).some((r) => r.method !== METHOD_NAME_ALL);

/** A resource's reads (GET, and HEAD) need `read`, its writes `write`. */
export const readOrWrite =
  (read: Scope, write: Scope) =>
  (c: Context): Scope =>
    c.req.method === "GET" || c.req.method === "HEAD" ? read : write;

/**
 * A known key, whatever its scopes, and not metered: reading one's own usage, or a quote before its body says what it
 * quotes. Its rate still holds.
 */
export function authenticated(deps: Pick<ApiDeps, "keys" | "clock" | "rate">): MiddlewareHandler<KeyEnv> {
  return async (c, next) => {
    const key = await authenticate(c.req.header("authorization"), deps.keys, deps.clock);
    await deps.rate?.take(key);
    c.set("key", key);
    await next();
  };
}

/**
 * A route on one key (`/v1/keys/{id}/rotate`): the key itself, or a key with `scope`; checked,
 * like {@link requireScope}, before any body is read, and then let in and metered.
 */
export function requireSelfOr(
  deps: Pick<ApiDeps, "keys" | "meter" | "clock" | "rate">,
  scope: Scope,
): MiddlewareHandler<KeyEnv> {
  return admitted(deps, (key, c) => {
    if (key.id !== c.req.param("id")) ensureScope(key, scope);
  });
}

/**
 * A known key, whatever its scopes, let in and metered like any request (`/v1/keys`: what each
 * key may do there is the use-case's to say: an admin anything, another key itself).
 */
export function anyKey(deps: Pick<ApiDeps, "keys" | "meter" | "clock" | "rate">): MiddlewareHandler<KeyEnv> {
  return admitted(deps, () => undefined);
}

/**
 * A known key that passes `check` (a 403 otherwise), let in (its rate and quota) and metered; before any body is read.
 */
function admitted(
  deps: Pick<ApiDeps, "keys" | "meter" | "clock" | "rate">,
  check: (key: ApiKeyRecord, c: Context) => void,
): MiddlewareHandler<KeyEnv> {
  return async (c, next) => {
    if (!answered(c)) return next();
    const key = await authenticate(c.req.header("authorization"), deps.keys, deps.clock);
    check(key, c);
    await admit(key, deps);
    c.set("key", key);
    c.set("meteredKey", key);
    await next();
  };
}
