import { $, createRoute } from "@hono/zod-openapi";
import { RoutingDecision } from "@harness-s/core/voting";
import { ownedBy } from "@harness-s/core/access";
import type { ApiDeps } from "../deps.ts";
import { apiRouter } from "../http.ts";
import { requireScope } from "../middleware/scope.ts";
import { IdPath, errors, jsonOf, notFound } from "../openapi-parts.ts";

/** `/v1/decisions`: recorded routing decisions. */
export const decisionRoutes = {
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getDecision",
    tags: ["router"],
    summary: "A recorded routing decision (only the key that asked may read it)",
    request: { params: IdPath },
    responses: { 200: jsonOf("the decision", RoutingDecision), ...notFound("decision"), ...errors },
  }),
};

export const decisionsApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, "route"))).openapi(decisionRoutes.get, async (c) => {
    const { id } = c.req.valid("param");
    return c.json(await ownedBy(deps.decisions, c.var.key, "decision").get(id), 200);
  });
