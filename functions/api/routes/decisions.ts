import { createRoute } from "@hono/zod-openapi";
import { NotFoundError } from "@harness-s/core";
import { RoutingDecision } from "@harness-s/core/voting";
import { visibleTo } from "@harness-s/core/access";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, idParam, requireScope } from "../http.ts";
import { errors, jsonOf, notFound, pathId } from "../openapi-parts.ts";

/** `/v1/decisions`: recorded routing decisions. */
export const decisionRoutes = {
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getDecision",
    tags: ["router"],
    summary: "A recorded routing decision (only the key that asked may read it)",
    parameters: [pathId()],
    responses: { 200: jsonOf("the decision", RoutingDecision), ...notFound("decision"), ...errors },
  }),
};

export const decisionsApp = (deps: ApiDeps) =>
  apiRouter().openapi(decisionRoutes.get, async (c) => {
    const key = await requireScope(c, "route", deps);
    const id = idParam(c, "id");
    const d = await deps.decisions.get(id);
    if (!d || !visibleTo(d.keyId, key)) throw new NotFoundError("decision", id);
    return c.json(d, 200);
  });
