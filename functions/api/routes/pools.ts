import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { HarnessPool, NotFoundError, parsePool } from "@harness-s/core";
import type { ApiDeps } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { readOrWrite, requireScope } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";

const PoolCreated = z.object({ id: z.string(), version: z.string() });
const PoolList = z.object({ pools: z.array(z.object({ id: z.string(), version: z.string(), siblings: z.number().int() })) });

/** `/v1/pools`: immutable, content-versioned harness pools. */
export const poolRoutes = {
  create: createRoute({
    method: "post",
    path: "/",
    operationId: "createPool",
    tags: ["pools"],
    summary: "Register an immutable harness pool",
    request: { body: jsonBody(HarnessPool) },
    responses: { 201: jsonOf("created: id and content version", PoolCreated), 409: error("a different pool exists under this id"), ...errors, ...bodyErrors },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listPools",
    tags: ["pools"],
    summary: "List pools",
    responses: { 200: jsonOf("pools: id, version, number of siblings", PoolList), ...errors },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getPool",
    tags: ["pools"],
    summary: "Get a pool",
    request: { params: IdPath },
    responses: { 200: jsonOf("the pool", HarnessPool), ...notFound("pool"), ...errors },
  }),
};

export const poolsApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, readOrWrite("pools:read", "pools:write"))))
    .openapi(withMiddleware(poolRoutes.create, readBody(deps, HarnessPool)), async (c) => {
      const pool = parsePool(c.var.body);
      await deps.pools.put(pool);
      return c.json({ id: pool.id, version: pool.version }, 201);
    })
    .openapi(poolRoutes.list, async (c) => c.json({ pools: await deps.pools.list() }, 200))
    .openapi(poolRoutes.get, async (c) => {
      const { id } = c.req.valid("param");
      const pool = await deps.pools.get(id);
      if (!pool) throw new NotFoundError("pool", id);
      return c.json(pool, 200);
    });
