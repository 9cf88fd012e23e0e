import { type OpenAPIHono, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { authenticate } from "@harness-s/core";
import type { ApiDeps } from "../deps.ts";
import type { ApiEnv } from "../http.ts";
import { errors, jsonOf } from "../openapi-parts.ts";

const Usage = z.object({
  keyId: z.string(),
  usage: z.record(z.string(), z.number()),
  requestQuota: z.number().nullable(),
  activeExperiments: z.number().int(),
});
const Health = z.object({ ok: z.literal(true) });
const OpenApiDocument = z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) });

/** Routes at the root: this key's usage, liveness, the OpenAPI document. */
export const accountRoutes = {
  usage: createRoute({
    method: "get",
    path: "/v1/usage",
    operationId: "getUsage",
    tags: ["account"],
    summary: "This key's metered usage (requests, ballots, rollouts, LLM tokens, compute) and quota; reading it is not metered",
    responses: { 200: jsonOf("usage", Usage), 401: errors[401], 503: errors[503] },
  }),
  health: createRoute({
    method: "get",
    path: "/health",
    operationId: "health",
    tags: ["account"],
    summary: "Liveness (no key needed)",
    security: [],
    responses: { 200: jsonOf("ok", Health), 414: errors[414] },
  }),
  openapi: createRoute({
    method: "get",
    path: "/openapi.json",
    operationId: "getOpenApiDocument",
    tags: ["account"],
    summary: "This document (no key needed)",
    security: [],
    responses: { 200: jsonOf("the OpenAPI 3.1 document", OpenApiDocument), 414: errors[414] },
  }),
};

/**
 * Registers the root routes on the app itself (a sub-app mounted at "/" would document its paths
 * as "//health"); `document` is the whole app's OpenAPI document.
 */
export function mountAccount(app: OpenAPIHono<ApiEnv>, deps: ApiDeps, document: () => z.infer<typeof OpenApiDocument>) {
  return app
    .openapi(accountRoutes.health, (c) => c.json({ ok: true as const }, 200))
    .openapi(accountRoutes.usage, async (c) => {
      const key = await authenticate(c.req.header("authorization"), deps.keys);
      return c.json({ keyId: key.id, usage: await deps.meter.get(key.id), requestQuota: key.requestQuota ?? null, activeExperiments: await deps.meter.slotsHeld(key.id) }, 200);
    })
    .openapi(accountRoutes.openapi, (c) => c.json(document(), 200));
}
