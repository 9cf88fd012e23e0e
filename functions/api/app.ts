import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import {
  ArmName,
  EXPERIMENT_LIMITS,
  EvidenceReport,
  ExperimentRequest,
  ValidationError,
  cancelExperiment,
  formatIssues,
  harnessIds,
  visibleTo,
  experimentStatus,
  startExperiment,
  HarnessPool,
  NotFoundError,
  RescueRequest,
  RouteRequest,
  authenticate,
  evidenceEnvelopes,
  parsePool,
  rescueStatus,
  routeTask,
  startRescue,
} from "@harness-s/core";
import type { ApiDeps } from "./deps.ts";
import { errorResponse, idParam, limitUrl, meterCompute, parseBody, requireScope, type ApiEnv } from "./http.ts";
import { ROUTES, documentConfig, registerSecurity } from "./routes.ts";

const StepsQuery = z.object({ arm: ArmName.optional(), seed: z.coerce.number().int().min(0).optional() });

/**
 * The router API. Handlers only authorise, parse, call one use-case and map the result.
 *
 * @example
 * serve({ fetch: createApp(deps).fetch, port: 18787 });
 */
export function createApp(deps: ApiDeps, servers?: { url: string; description?: string }[]): OpenAPIHono<ApiEnv> {
  const route = new OpenAPIHono<ApiEnv>().openapi(ROUTES["/v1/route"].route, async (c) => {
    const key = await requireScope(c, "route", deps);
    const req = await parseBody(c, RouteRequest, deps.maxBodyBytes, deps.bodyTimeouts);
    const decision = await routeTask(req, deps, key.id);
    const llmTokens = decision.ballots.reduce((n, b) => n + (b.usage ? b.usage.promptTokens + b.usage.completionTokens : 0), 0);
    await deps.meter.add(key.id, { ballots: decision.ballots.length, llmTokens });
    return c.json(decision, 200);
  });

  const pools = new OpenAPIHono<ApiEnv>()
    .openapi(ROUTES["/v1/pools"].create, async (c) => {
      await requireScope(c, "pools:write", deps);
      const pool = parsePool(await parseBody(c, HarnessPool, deps.maxBodyBytes, deps.bodyTimeouts));
      await deps.pools.put(pool);
      return c.json({ id: pool.id, version: pool.version }, 201);
    })
    .openapi(ROUTES["/v1/pools"].list, async (c) => {
      await requireScope(c, "pools:read", deps);
      return c.json({ pools: await deps.pools.list() }, 200);
    })
    .openapi(ROUTES["/v1/pools"].get, async (c) => {
      await requireScope(c, "pools:read", deps);
      const id = idParam(c, "id");
      const pool = await deps.pools.get(id);
      if (!pool) throw new NotFoundError("pool", id);
      return c.json(pool, 200);
    });

  const profiles = new OpenAPIHono<ApiEnv>()
    .openapi(ROUTES["/v1/profiles"].evidence, async (c) => {
      const key = await requireScope(c, "profiles:write", deps);
      const report = await parseBody(c, EvidenceReport, deps.maxBodyBytes, deps.bodyTimeouts);
      const pool = await deps.pools.get(report.poolId);
      if (!pool) throw new NotFoundError("pool", report.poolId);
      const known = new Set(harnessIds(pool));
      const unknown = report.outcomes.flatMap((o, i) => (known.has(o.harnessId) ? [] : [`outcomes.${i}.harnessId: pool ${pool.id} has no harness ${JSON.stringify(o.harnessId)}`]));
      if (unknown.length) throw new ValidationError("request body", unknown);
      await deps.evidence.send(evidenceEnvelopes(report));
      await deps.meter.add(key.id, { rollouts: report.outcomes.length });
      return c.json({ queued: report.outcomes.length }, 202);
    })
    .openapi(ROUTES["/v1/profiles"].list, async (c) => {
      await requireScope(c, "profiles:read", deps);
      const poolId = idParam(c, "poolId", c.req.query("poolId"));
      return c.json({ poolId, profiles: await deps.profiles.get(poolId) }, 200);
    });

  const rescues = new OpenAPIHono<ApiEnv>()
    .openapi(ROUTES["/v1/rescues"].start, async (c) => {
      const key = await requireScope(c, "rescues", deps);
      const req = await parseBody(c, RescueRequest, deps.maxBodyBytes, deps.bodyTimeouts);
      const job = await startRescue(req, deps, key.id);
      await deps.meter.add(key.id, { rollouts: job.expected, ballots: deps.voters.length });
      return c.json({ id: job.id, chosen: job.chosen, expected: job.expected }, 202);
    })
    .openapi(ROUTES["/v1/rescues"].get, async (c) => {
      const key = await requireScope(c, "rescues", deps);
      return c.json(await rescueStatus(idParam(c, "id"), deps, key), 200);
    });

  const experiments = new OpenAPIHono<ApiEnv>()
    .openapi(ROUTES["/v1/experiments"].start, async (c) => {
      const key = await requireScope(c, "experiments", deps);
      const req = await parseBody(c, ExperimentRequest, deps.maxBodyBytes, deps.bodyTimeouts);
      const slots = { meter: deps.meter, limit: deps.experimentsPerKey ?? EXPERIMENT_LIMITS.activePerKey };
      const record = await startExperiment(req, key.id, { ...deps, slots, newId: () => deps.newId("exp") });
      return c.json(experimentStatus(record, deps.prices), 202);
    })
    .openapi(ROUTES["/v1/experiments"].get, async (c) =>
      c.json(experimentStatus(await ownExperiment(idParam(c, "id"), await requireScope(c, "experiments", deps)), deps.prices), 200),
    )
    .openapi(ROUTES["/v1/experiments"].cancel, async (c) => {
      const key = await requireScope(c, "experiments", deps);
      return c.json(experimentStatus(await cancelExperiment(idParam(c, "id"), key, deps), deps.prices), 200);
    })
    .openapi(ROUTES["/v1/experiments"].steps, async (c) => {
      const record = await ownExperiment(idParam(c, "id"), await requireScope(c, "experiments", deps));
      const filter = StepsQuery.safeParse({ arm: c.req.query("arm"), seed: c.req.query("seed") });
      if (!filter.success) throw new ValidationError("query", formatIssues(filter.error.issues));
      return c.json({ id: record.id, steps: await deps.experimentSteps.list(record.id, filter.data) }, 200);
    })
    .openapi(ROUTES["/v1/experiments"].metrics, async (c) => {
      const record = await ownExperiment(idParam(c, "id"), await requireScope(c, "experiments", deps));
      return c.json({ id: record.id, status: record.status, results: record.results, summary: record.summary ?? null }, 200);
    });

  /** An experiment is visible to the key that started it (and to admin keys) only. */
  const ownExperiment = async (id: string, key: { id: string; scopes: string[] }) => {
    const record = await deps.experiments.get(id);
    if (!record || !visibleTo(record.keyId, key)) throw new NotFoundError("experiment", id);
    return record;
  };

  const decisions = new OpenAPIHono<ApiEnv>().openapi(ROUTES["/v1/decisions"].get, async (c) => {
    const key = await requireScope(c, "route", deps);
    const id = idParam(c, "id");
    const d = await deps.decisions.get(id);
    if (!d || !visibleTo(d.keyId, key)) throw new NotFoundError("decision", id);
    return c.json(d, 200);
  });

  const app = new OpenAPIHono<ApiEnv>();
  app.use(limitUrl());
  app.use(meterCompute(deps));
  app
    .openapi(ROUTES[""].health, (c) => c.json({ ok: true }, 200))
    .openapi(ROUTES[""].usage, async (c) => {
      const key = await authenticate(c.req.header("authorization"), deps.keys);
      return c.json({ keyId: key.id, usage: await deps.meter.get(key.id), requestQuota: key.requestQuota ?? null, activeExperiments: await deps.meter.slotsHeld(key.id) }, 200);
    })
    .openapi(ROUTES[""].openapi, (c) => c.json(app.getOpenAPI31Document(documentConfig(servers)), 200))
    .route("/v1/route", route)
    .route("/v1/pools", pools)
    .route("/v1/profiles", profiles)
    .route("/v1/decisions", decisions)
    .route("/v1/rescues", rescues)
    .route("/v1/experiments", experiments)
    .onError(errorResponse);
  registerSecurity(app);
  return app;
}
