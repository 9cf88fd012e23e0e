import { $, createRoute } from "@hono/zod-openapi";
import { RouteRequest, routeTask } from "@harness-s/core/routing";
import { poolsVisibleTo } from "@harness-s/core/pools";
import { RoutingDecision } from "@harness-s/core/voting";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { usageOf } from "../middleware/metering.ts";
import { requireScope } from "../middleware/scope.ts";
import { bodyErrors, error, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";

/** `/v1/route`: rank a pool's harnesses for a task. */
export const routeRoutes = {
  route: createRoute({
    method: "post",
    path: "/",
    operationId: "routeTask",
    tags: ["router"],
    summary: "Rank a pool's harnesses for a task (rescue Top-k, or Rank-1 without failure tags)",
    request: { body: jsonBody(RouteRequest) },
    responses: {
      200: jsonOf(
        "the decision: each answering voter's ballot (reason, tokens, cost) and each abstention by kind",
        RoutingDecision,
      ),
      ...notFound("pool"),
      ...errors,
      503: error(
        "QUORUM_NOT_MET: fewer voters answered than the panel's quorum (and it names no fallback); or a backing store is unavailable (retry)",
      ),
      ...bodyErrors,
    },
  }),
};

export const routeApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, "route"))).openapi(
    withMiddleware(routeRoutes.route, readBody(deps, RouteRequest)),
    async (c) => {
      const decision = await routeTask(
        c.var.body,
        { ...deps, pools: poolsVisibleTo(deps.pools, c.var.key) },
        c.var.key.id,
        usageOf(c),
      );
      return c.json(decision, 200);
    },
  );
