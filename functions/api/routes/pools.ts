import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import {
  HarnessPool,
  NotConfiguredError,
  NotFoundError,
  ValidationError,
  MINTED_ID_KINDS,
  mintedKindOf,
  parsePool,
} from "@harness-s/core";
import { ownedBy } from "@harness-s/core/access";
import { budgetedPricer } from "@harness-s/core/quoting";
import {
  POOL_EVOLUTION_LIMITS,
  PoolEvolutionStatus,
  PoolEvolveRequest,
  cancelPoolEvolution,
  poolEvolutionStatus,
  poolsVisibleTo,
  startPoolEvolution,
} from "@harness-s/core/pools";
import type { ApiDeps } from "../deps.ts";
import { pricing } from "./account.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { ensureScope, requireAnyScope, requireScope } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound, overBudget } from "../openapi-parts.ts";

const PoolCreated = z.object({ id: z.string(), version: z.string() });
const PoolList = z.object({
  pools: z.array(
    z.object({ id: z.string(), version: z.string(), siblings: z.number().int(), owner: z.string().optional() }),
  ),
});
const EvolveBody = z.strictObject({ evolve: PoolEvolveRequest });
/**
 * What `POST /v1/pools` takes: a pool to register as it is, or `{"evolve": …}`, an evolution for the caller's
 * environment.
 */
const PoolBody = z.union([HarnessPool, EvolveBody]);
type PoolBody = z.infer<typeof PoolBody>;
/**
 * Reads the body as the one it names (an `evolve` key: an evolution), so its issues are that one's, each at its path.
 */
const PoolBodyReader = z.unknown().transform((value, ctx): PoolBody => {
  const schema = value !== null && typeof value === "object" && "evolve" in value ? EvolveBody : HarnessPool;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
  return z.NEVER;
});
const evolving = (body: PoolBody): body is z.infer<typeof EvolveBody> => "evolve" in body;

/**
 * A pool a key registers as it is: its own (an admin's is every key's unless it names an owner),
 * under an id the service does not mint (a `pev_…` id would squat an evolution's pool).
 */
function registeredPool(body: HarnessPool, key: { id: string; scopes: readonly string[] }): HarnessPool {
  const admin = key.scopes.includes("admin");
  if (body.owner !== undefined && !admin)
    throw new ValidationError("pool", [
      "owner: only an admin key names a pool's owner (a pool a key registers is its own)",
    ]);
  const minted = mintedKindOf(body.id);
  if (minted)
    throw new ValidationError("pool", [
      `id: ids beginning "${minted}_" are the service's own (it mints them); choose another`,
    ]);
  const pool = parsePool(body);
  return admin ? pool : { ...pool, owner: key.id };
}

/** `/v1/pools`: immutable, content-versioned harness pools, and pools evolved for a caller's environment. */
export const poolRoutes = {
  create: createRoute({
    method: "post",
    path: "/",
    operationId: "createPool",
    tags: ["pools"],
    summary:
      "Register an immutable harness pool (scope pools:write), or evolve one for your environment ({evolve: …}, scope rescues)",
    description: `With \`evolve\`, a sibling pool is evolved from your H0 (your system text and each dev task's tools) on your dev tasks (2 to ${POOL_EVOLUTION_LIMITS.devTasks}) in your OpenEnv environment, each rollout sampled at your registered policy endpoint at one weight version, as a job: 202 with its id, then \`GET /v1/pools/evolutions/{id}\` (queued, running, done, failed or cancelled; \`POST /v1/pools/evolutions/{id}/cancel\` stops it within seconds, metered as it spends). It is quoted first (402 above \`budget.usd\` or your key's budget) and metered per rollout; the pool is stored under the job's id, yours only, frozen, and rescues name it as \`poolId\`. A pool registered as it is (scope pools:write) is the registering key's own, seen and routed in by it alone; an admin key's is shared by every key unless it names an \`owner\`. Ids the service mints (\`${MINTED_ID_KINDS.map((k) => `${k}_`).join("`, `")}\`…) are refused.`,
    request: { body: jsonBody(PoolBody) },
    responses: {
      201: jsonOf("registered: id and content version", PoolCreated),
      202: jsonOf("evolution accepted: the job's status (its id is the pool's to be)", PoolEvolutionStatus),
      ...notFound("policy endpoint"),
      409: error("a different pool exists under this id"),
      ...overBudget,
      501: error("this deployment evolves no pools (no caller policies or coordinator)"),
      ...errors,
      ...bodyErrors,
    },
  }),
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listPools",
    tags: ["pools"],
    summary:
      "List the pools this key may route in: the deployment's shared ones, and its own (registered, evolved, or evolved by its experiments)",
    responses: {
      200: jsonOf("pools: id, version, number of siblings, owner (an evolved pool's key)", PoolList),
      ...errors,
    },
  }),
  cancelEvolution: createRoute({
    method: "post",
    path: "/evolutions/{id}/cancel",
    operationId: "cancelPoolEvolution",
    tags: ["pools"],
    summary:
      "Cancel a pool evolution: a queued one ends at once, a running one within seconds (what it spent is metered); an ended one is left as it is",
    request: { params: IdPath },
    responses: {
      200: jsonOf("status after the request (cancelled, or running with the cancel asked)", PoolEvolutionStatus),
      ...notFound("pool evolution for this key"),
      ...errors,
    },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getPool",
    tags: ["pools"],
    summary: "Get a pool (another key's evolved pool is not found)",
    request: { params: IdPath },
    responses: { 200: jsonOf("the pool", HarnessPool), ...notFound("pool"), ...errors },
  }),
  evolution: createRoute({
    method: "get",
    path: "/evolutions/{id}",
    operationId: "getPoolEvolution",
    tags: ["pools"],
    summary:
      "A pool evolution's status: progress, usage and charge so far, its quote, its outcome and, once done, the pool",
    request: { params: IdPath },
    responses: {
      200: jsonOf("status (failed: its error's code and message)", PoolEvolutionStatus),
      ...notFound("pool evolution for this key"),
      ...errors,
    },
  }),
};

export const poolsApp = (deps: ApiDeps) =>
  $(apiRouter())
    // A pool put as it is needs pools:write; an evolution for the caller's own environment, rescues (what its rescues
    // will name).
    .openapi(
      withMiddleware(
        poolRoutes.create,
        requireAnyScope(deps, ["pools:write", "rescues"]),
        readBody(deps, PoolBodyReader),
      ),
      async (c) => {
        const [body, key] = [c.var.body, c.var.key];
        ensureScope(key, evolving(body) ? "rescues" : "pools:write");
        if (evolving(body)) {
          const priced = budgetedPricer(pricing(deps), key);
          const price = (req: PoolEvolveRequest) => priced({ pool: req }, req.budget?.usd);
          const evolutions = deps.poolEvolutions;
          if (!evolutions) throw new NotConfiguredError("this deployment evolves no pools (no pool evolution store)");
          const started = await startPoolEvolution(body.evolve, key.id, {
            ...deps,
            evolutions,
            price,
            slots: deps.meter,
            newId: () => deps.newId("pev"),
          });
          return c.json(poolEvolutionStatus(started, deps.prices), 202);
        }
        const pool = registeredPool(body, key);
        await deps.pools.put(pool);
        return c.json({ id: pool.id, version: pool.version }, 201);
      },
    )
    .openapi(withMiddleware(poolRoutes.list, requireScope(deps, "pools:read")), async (c) =>
      c.json({ pools: await poolsVisibleTo(deps.pools, c.var.key).list() }, 200),
    )
    .openapi(withMiddleware(poolRoutes.evolution, requireScope(deps, "rescues")), async (c) => {
      const { id } = c.req.valid("param");
      if (!deps.poolEvolutions) throw new NotFoundError("pool evolution", id);
      const found = await ownedBy(deps.poolEvolutions, c.var.key, "pool evolution").get(id);
      const [pool, usage] = await Promise.all([
        found.pool ? deps.pools.get(found.pool.id) : undefined,
        deps.meter.job(found.id),
      ]);
      return c.json(poolEvolutionStatus(found, deps.prices, pool, { usage, priceList: pricing(deps).priceList }), 200);
    })
    .openapi(withMiddleware(poolRoutes.cancelEvolution, requireScope(deps, "rescues")), async (c) => {
      const evolutions = deps.poolEvolutions;
      if (!evolutions) throw new NotFoundError("pool evolution", c.req.valid("param").id);
      const after = await cancelPoolEvolution(c.req.valid("param").id, c.var.key, {
        evolutions,
        clock: deps.clock,
        slots: deps.meter,
      });
      return c.json(poolEvolutionStatus(after, deps.prices), 200);
    })
    .openapi(withMiddleware(poolRoutes.get, requireScope(deps, "pools:read")), async (c) => {
      const { id } = c.req.valid("param");
      const pool = await poolsVisibleTo(deps.pools, c.var.key).get(id);
      if (!pool) throw new NotFoundError("pool", id);
      return c.json(pool, 200);
    });
