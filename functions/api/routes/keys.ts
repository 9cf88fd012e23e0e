import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import {
  CreateKeyRequest,
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
import { anyKey } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";

const Created = z.object({ key: KeyView, secret: z.string().describe("the key's secret: shown this once, kept nowhere (only its hash is stored)") });
const adminOnly = { 403: error("FORBIDDEN: only an admin key may do this, and no key may raise its own scopes or limits") };
const lastAdmin = {
  409: error("CONFLICT: the last admin key cannot be revoked or lose its admin scope; a revoked key cannot change; or the key changed meanwhile (read it again)"),
};

/** `/v1/keys`: API keys an operator issues, limits, rotates and revokes; each operation recorded. */
export const keyRoutes = {
  create: createRoute({
    method: "post",
    path: "/",
    operationId: "createKey",
    tags: ["keys"],
    summary: "Issue a key (admin): its label, scopes, request quota, USD budget, rate (requests per second, burst) and expiry; the secret is shown once",
    request: { body: jsonBody(CreateKeyRequest) },
    responses: { 201: jsonOf("the key and its secret", Created), ...errors, ...adminOnly, ...bodyErrors },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listKeys",
    tags: ["keys"],
    summary: "Every key (admin), or the calling key itself",
    responses: { 200: jsonOf("the keys (no secret, no hash)", z.object({ keys: z.array(KeyView) })), ...errors },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getKey",
    tags: ["keys"],
    summary: "One key (admin: any; another key: itself)",
    request: { params: IdPath },
    responses: { 200: jsonOf("the key", KeyView), ...notFound("key"), ...errors },
  }),
  update: createRoute({
    method: "patch",
    path: "/{id}",
    operationId: "updateKey",
    tags: ["keys"],
    summary: "Change a key's label, scopes, quota, budget, rate or expiry (admin; null removes a limit); a key cannot raise its own",
    request: { params: IdPath, body: jsonBody(UpdateKeyRequest) },
    responses: { 200: jsonOf("the key as changed", KeyView), ...notFound("key"), ...errors, ...adminOnly, ...lastAdmin, ...bodyErrors },
  }),
  rotate: createRoute({
    method: "post",
    path: "/{id}/rotate",
    operationId: "rotateKey",
    tags: ["keys"],
    summary: "A new secret for a key (admin: any; another key: itself); the old secrets keep working for graceSeconds (default 3600), then are a 401",
    request: { params: IdPath, body: jsonBody(RotateKeyRequest) },
    responses: { 200: jsonOf("the key and its new secret", Created), ...notFound("key"), ...errors, ...lastAdmin, ...bodyErrors },
  }),
  revoke: createRoute({
    method: "delete",
    path: "/{id}",
    operationId: "revokeKey",
    tags: ["keys"],
    summary: "Revoke a key (admin): every request with it is a 401 from then on, on every API instance within KEY_CHANGE_SECONDS; its usage and records are kept",
    request: { params: IdPath },
    responses: { 200: jsonOf("the key, revoked", KeyView), ...notFound("key"), ...errors, ...adminOnly, ...lastAdmin },
  }),
  events: createRoute({
    method: "get",
    path: "/{id}/events",
    operationId: "listKeyEvents",
    tags: ["keys"],
    summary: "A key's operations, newest first (admin): who did what, when; never a secret",
    request: { params: IdPath },
    responses: { 200: jsonOf("its events", z.object({ events: z.array(KeyEventView) })), ...notFound("key"), ...errors, ...adminOnly },
  }),
};

export const keysApp = (deps: ApiDeps) => {
  const keyDeps = { keys: deps.keys, events: deps.keyEvents, clock: deps.clock, newId: (kind: string) => deps.newId(kind as "key") };
  return $(apiRouter().use(anyKey(deps)))
    .openapi(withMiddleware(keyRoutes.create, readBody(deps, CreateKeyRequest)), async (c) => c.json(await createKey(c.var.body, c.var.key, keyDeps), 201))
    .openapi(keyRoutes.list, async (c) => c.json({ keys: await listKeys(c.var.key, keyDeps) }, 200))
    .openapi(keyRoutes.get, async (c) => c.json(await getKey(c.req.valid("param").id, c.var.key, keyDeps), 200))
    .openapi(withMiddleware(keyRoutes.update, readBody(deps, UpdateKeyRequest)), async (c) => c.json(await updateKey(c.req.valid("param").id, c.var.body, c.var.key, keyDeps), 200))
    .openapi(withMiddleware(keyRoutes.rotate, readBody(deps, RotateKeyRequest)), async (c) => c.json(await rotateKey(c.req.valid("param").id, c.var.body, c.var.key, keyDeps), 200))
    .openapi(keyRoutes.revoke, async (c) => c.json(await revokeKey(c.req.valid("param").id, c.var.key, keyDeps), 200))
    .openapi(keyRoutes.events, async (c) => c.json({ events: await keyEvents(c.req.valid("param").id, c.var.key, keyDeps) }, 200));
};
