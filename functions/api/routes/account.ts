import { type OpenAPIHono, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import {
  PriceList,
  UsageExportQuery,
  UsagePeriod,
  UsageRequestQuery,
  renderUsage,
  limitsLeft,
  usageByDay,
} from "@harness-s/core/billing";
import type { ApiDeps } from "../deps.ts";
import { type ApiEnv, withMiddleware } from "../http.ts";
import { authenticated } from "../middleware/scope.ts";
import { errors, jsonOf } from "../openapi-parts.ts";

const Usage = z.object({
  keyId: z.string(),
  usage: z.record(z.string(), z.number()),
  requestQuota: z.number().nullable(),
  budgetUsd: z.number().nullable(),
  /** The key's charge so far at the tariff (what its budget is held against), and what that usage cost in goods. */
  spentUsd: z.number(),
  costOfGoodsUsd: z.number(),
  /** What is left of the USD budget and of the request quota (null: the key has no such limit). */
  leftUsd: z.number().nullable(),
  requestsLeft: z.number().nullable(),
  activeExperiments: z.number().int(),
  /** With `from` and `to`: the key's usage by UTC day, each day's cost of goods and charge apart. */
  days: z
    .array(
      z.object({
        keyId: z.string(),
        day: z.string(),
        usage: z.record(z.string(), z.number()),
        costOfGoodsUsd: z.number(),
        chargeUsd: z.number(),
      }),
    )
    .optional(),
});
/**
 * `GET /v1/usage`'s query, documented as {@link UsageRequestQuery} (each parameter optional): nothing
 * (the key's totals), or a whole {@link UsagePeriod} (by day), checked as one.
 */
const UsageQuery = z.pipe(
  z.transform((query: Record<string, unknown>, ctx) => {
    const period = Object.keys(query).length > 0 ? UsagePeriod.safeParse(query) : undefined;
    for (const issue of period?.error?.issues ?? [])
      ctx.issues.push({ code: "custom", message: issue.message, path: issue.path, input: query });
    return query;
  }),
  UsageRequestQuery.extend({ granularity: z.literal("day").default("day") }),
);
const Health = z.object({ ok: z.literal(true) });
const OpenApiDocument = z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) });

/** Routes at the root: this key's usage, liveness, the OpenAPI document. */
export const accountRoutes = {
  usage: createRoute({
    method: "get",
    path: "/v1/usage",
    operationId: "getUsage",
    tags: ["account"],
    summary:
      "This key's metered usage (requests, ballots, rollouts, LLM tokens, compute, cost of goods), quota and budget; with from and to, by UTC day; reading it is not metered",
    description: "Without parameters: the totals. With `from` and `to` (and only then any other): by UTC day.",
    request: { query: UsageQuery },
    responses: {
      200: jsonOf("usage", Usage),
      400: errors[400],
      401: errors[401],
      403: errors[403],
      429: errors[429],
      503: errors[503],
    },
  }),
  usageExport: createRoute({
    method: "get",
    path: "/v1/usage/export",
    operationId: "exportUsage",
    tags: ["account"],
    summary:
      "Usage by key and UTC day for invoicing: JSON lines or CSV (admin keys: keyId=* for every key); reading it is not metered",
    request: { query: UsageExportQuery },
    responses: {
      200: {
        description: "one row per key and day",
        content: { "application/x-ndjson": { schema: z.string() }, "text/csv": { schema: z.string() } },
      },
      400: errors[400],
      401: errors[401],
      403: errors[403],
      429: errors[429],
      503: errors[503],
    },
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
    .openapi(withMiddleware(accountRoutes.usage, authenticated(deps)), async (c) => {
      const [key, { from, to, ...rest }] = [c.var.key, c.req.valid("query")];
      const prices = pricing(deps);
      const days =
        from !== undefined && to !== undefined ? await usageByDay({ from, to, ...rest }, key, prices) : undefined;
      const usage = await deps.meter.get(key.id);
      const totals = {
        keyId: key.id,
        usage,
        requestQuota: key.requestQuota ?? null,
        budgetUsd: key.budgetUsd ?? null,
        ...limitsLeft(usage, key, prices),
        activeExperiments: await deps.meter.slotsHeld(key.id),
      };
      return c.json({ ...totals, ...(days ? { days } : {}) }, 200);
    })
    .openapi(withMiddleware(accountRoutes.usageExport, authenticated(deps)), async (c) => {
      const { format, ...period } = c.req.valid("query");
      const rows = await usageByDay(period, c.var.key, pricing(deps));
      return c.body(renderUsage(rows, format), 200, {
        "content-type": format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
      }) as never;
    })
    .openapi(accountRoutes.openapi, (c) => c.json(document(), 200));
}

/** The tariff and the price list the API reports cost with. */
export const pricing = (deps: ApiDeps) => ({
  meter: deps.meter,
  tariff: deps.prices,
  priceList: deps.priceList ?? PriceList.parse({}),
  served: deps.offers?.served,
});
