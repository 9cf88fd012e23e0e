import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import {
  CreateKeyRequest,
  KEY_CHANGE_SECONDS,
  KEY_LIMITS,
  KeyEventView,
  KeyView,
  RotateKeyRequest,
  UpdateKeyRequest,
  createKey,
  getKey,
  keyEvents,
  listKeys,
  revokeKey,
  rotateKey,
  updateKey,
} from "@harness-s/core/access";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { anyKey, requireScope, requireSelfOr } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";

const Created = z.object({
  key: KeyView,
  secret: z.string().describe("the key's secret: shown this once, kept nowhere (only its hash is stored)"),
});
const shownOnce = (what: string) => jsonOf(`${what}: the secret is shown this once, store it now`, Created);
const adminOnly = { 403: error("FORBIDDEN: only an admin key may do this") };
/**
 * The shared errors but 403: listing, reading and rotating need no scope (a key that is not an admin acts on itself).
 */
const { 403: _noScope, ...keyErrors } = errors;
const seenBy = { 404: error("no such key; a key that is not an admin sees only itself, any other id is a 404") };
const conflicts = {
  update: error(
    "CONFLICT: the key is revoked, the change would leave no working admin key, or the key changed meanwhile (read it again)",
  ),
  rotate: error("CONFLICT: the key is revoked, or it changed meanwhile (rotate again)"),
  revoke: error(
    "CONFLICT: it is the last working admin key (make another first), or it changed meanwhile; revoking a revoked key is a 200",
  ),
};

/** `/v1/keys`: API keys an operator issues, limits, rotates and revokes; each operation recorded. */
export const keyRoutes = {
  create: createRoute({
    method: "post",
    path: "/",
    operationId: "createKey",
    tags: ["keys"],
    summary:
      "Issue a key (admin): its label, scopes, request quota, USD budget, rate (requests per second, burst) and expiry; the secret is shown once",
    request: { body: jsonBody(CreateKeyRequest) },
    responses: { 201: shownOnce("the key and its secret"), ...errors, ...adminOnly, ...bodyErrors },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listKeys",
    tags: ["keys"],
    summary: "Every key (admin), or the calling key itself",
    responses: { 200: jsonOf("the keys (no secret, no hash)", z.object({ keys: z.array(KeyView) })), ...keyErrors },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getKey",
    tags: ["keys"],
    summary: "One key (admin: any; another key: itself)",
    request: { params: IdPath },
    responses: { 200: jsonOf("the key (no secret, no hash)", KeyView), ...seenBy, ...keyErrors },
  }),
  update: createRoute({
    method: "patch",
    path: "/{id}",
    operationId: "updateKey",
    tags: ["keys"],
    summary:
      "Change a key's label, scopes, quota, budget, rate or expiry (admin; null removes a limit); a key cannot raise its own",
    request: { params: IdPath, body: jsonBody(UpdateKeyRequest) },
    responses: {
      200: jsonOf("the key as changed", KeyView),
      ...notFound("key"),
      ...errors,
      403: error("FORBIDDEN: only an admin key may change a key, and no key may raise its own scopes or limits"),
      409: conflicts.update,
      ...bodyErrors,
    },
  }),
  rotate: createRoute({
    method: "post",
    path: "/{id}/rotate",
    operationId: "rotateKey",
    tags: ["keys"],
    summary: `A new secret for a key (admin: any; another key: itself); the old secrets keep working for graceSeconds (default ${KEY_LIMITS.defaultGraceSeconds}), then are a 401`,
    request: { params: IdPath, body: jsonBody(RotateKeyRequest) },
    responses: {
      200: shownOnce("the key and its new secret"),
      404: error("no such key (an admin's rotation of an id no key has)"),
      ...keyErrors,
      403: error("FORBIDDEN: a key that is not an admin may rotate only itself (checked before the body is read)"),
      409: conflicts.rotate,
      ...bodyErrors,
    },
  }),
  revoke: createRoute({
    method: "delete",
    path: "/{id}",
    operationId: "revokeKey",
    tags: ["keys"],
    summary: `Revoke a key (admin): every request with it is a 401 from then on, on every API instance within ${KEY_CHANGE_SECONDS} s; its usage and records are kept`,
    request: { params: IdPath },
    responses: {
      200: jsonOf("the key, revoked", KeyView),
      ...notFound("key"),
      ...errors,
      ...adminOnly,
      409: conflicts.revoke,
    },
  }),
  events: createRoute({
    method: "get",
    path: "/{id}/events",
    operationId: "listKeyEvents",
    tags: ["keys"],
    summary: "A key's operations, newest first (admin): who did what, when; never a secret",
    request: { params: IdPath },
    responses: {
      200: jsonOf("its events", z.object({ events: z.array(KeyEventView) })),
      ...notFound("key"),
      ...errors,
      ...adminOnly,
    },
  }),
};

export const keysApp = (deps: ApiDeps) => {
  const keyDeps = {
    keys: deps.keys,
    events: deps.keyEvents,
    clock: deps.clock,
    newId: (kind: string) => deps.newId(kind as "key"),
  };
  // Who may ask is checked before any body is read: an admin key for what only admins do, the key itself (or an admin)
  // to rotate it.
  const admin = requireScope(deps, "admin");
  return $(apiRouter())
    .openapi(withMiddleware(keyRoutes.create, admin, readBody(deps, CreateKeyRequest)), async (c) =>
      c.json(await createKey(c.var.body, c.var.key, keyDeps), 201),
    )
    .openapi(withMiddleware(keyRoutes.list, anyKey(deps)), async (c) =>
      c.json({ keys: await listKeys(c.var.key, keyDeps) }, 200),
    )
    .openapi(withMiddleware(keyRoutes.get, anyKey(deps)), async (c) =>
      c.json(await getKey(c.req.valid("param").id, c.var.key, keyDeps), 200),
    )
    .openapi(withMiddleware(keyRoutes.update, admin, readBody(deps, UpdateKeyRequest)), async (c) =>
      c.json(await updateKey(c.req.valid("param").id, c.var.body, c.var.key, keyDeps), 200),
    )
    .openapi(
      withMiddleware(keyRoutes.rotate, requireSelfOr(deps, "admin"), readBody(deps, RotateKeyRequest)),
      async (c) => c.json(await rotateKey(c.req.valid("param").id, c.var.body, c.var.key, keyDeps), 200),
    )
    .openapi(withMiddleware(keyRoutes.revoke, admin), async (c) =>
      c.json(await revokeKey(c.req.valid("param").id, c.var.key, keyDeps), 200),
    )
    .openapi(withMiddleware(keyRoutes.events, admin), async (c) =>
      c.json({ events: await keyEvents(c.req.valid("param").id, c.var.key, keyDeps) }, 200),
    );
};
