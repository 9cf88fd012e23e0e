import { Hono } from "hono";
import { z } from "zod";
import {
  EvidenceReport,
  ExperimentRequest,
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
import { errorResponse, meterCompute, parseBody, requireScope } from "./http.ts";
import { openApiDocument } from "./openapi.ts";

/**
 * The router API. Handlers only authorise, parse, call one use-case and map the result.
 *
 * @example
 * serve({ fetch: createApp(deps).fetch, port: 18787 });
 */
export function createApp(deps: ApiDeps): Hono {
  const route = new Hono().post("/", async (c) => {
    const key = await requireScope(c, "route", deps);
    const req = await parseBody(c, RouteRequest, deps.maxBodyBytes);
    const decision = await routeTask(req, deps);
    const llmTokens = decision.ballots.reduce((n, b) => n + (b.usage ? b.usage.promptTokens + b.usage.completionTokens : 0), 0);
    await deps.meter.add(key.id, { ballots: decision.ballots.length, llmTokens });
    return c.json(decision);
  });

  const pools = new Hono()
    .post("/", async (c) => {
      await requireScope(c, "pools:write", deps);
      const pool = parsePool(await parseBody(c, HarnessPool, deps.maxBodyBytes));
      await deps.pools.put(pool);
      return c.json({ id: pool.id, version: pool.version }, 201);
    })
    .get("/", async (c) => {
      await requireScope(c, "pools:read", deps);
      return c.json({ pools: await deps.pools.list() });
    })
    .get("/:id", async (c) => {
      await requireScope(c, "pools:read", deps);
      const pool = await deps.pools.get(c.req.param("id"));
      if (!pool) throw new NotFoundError("pool", c.req.param("id"));
      return c.json(pool);
    });

  const profiles = new Hono()
    .post("/evidence", async (c) => {
      const key = await requireScope(c, "profiles:write", deps);
      const report = await parseBody(c, EvidenceReport, deps.maxBodyBytes);
      if (!(await deps.pools.get(report.poolId))) throw new NotFoundError("pool", report.poolId);
      await deps.evidence.send(evidenceEnvelopes(report));
      await deps.meter.add(key.id, { rollouts: report.outcomes.length });
      return c.json({ queued: report.outcomes.length }, 202);
    })
    .get("/", async (c) => {
    await requireScope(c, "profiles:read", deps);
    const poolId = z.string().min(1).safeParse(c.req.query("poolId"));
    if (!poolId.success) return c.json({ error: { code: "VALIDATION_FAILED", message: "query parameter poolId is required", issues: ["poolId: required"] } }, 400);
    return c.json({ poolId: poolId.data, profiles: await deps.profiles.get(poolId.data) });
  });

  const rescues = new Hono()
    .post("/", async (c) => {
      const key = await requireScope(c, "rescues", deps);
      const req = await parseBody(c, RescueRequest, deps.maxBodyBytes);
      const job = await startRescue(req, deps);
      await deps.meter.add(key.id, { rollouts: job.expected, ballots: deps.voters.length });
      return c.json({ id: job.id, chosen: job.chosen, expected: job.expected }, 202);
    })
    .get("/:id", async (c) => {
      await requireScope(c, "rescues", deps);
      return c.json(await rescueStatus(c.req.param("id"), deps));
    });

  const experiments = new Hono()
    .post("/", async (c) => {
      const key = await requireScope(c, "experiments", deps);
      const req = await parseBody(c, ExperimentRequest, deps.maxBodyBytes);
      const record = await startExperiment(req, key.id, { ...deps, newId: () => deps.newId("exp") });
      return c.json(experimentStatus(record, deps.prices), 202);
    })
    .get("/:id", async (c) => c.json(experimentStatus(await ownExperiment(c.req.param("id"), await requireScope(c, "experiments", deps)), deps.prices)))
    .get("/:id/steps", async (c) => {
      const record = await ownExperiment(c.req.param("id"), await requireScope(c, "experiments", deps));
      const seed = c.req.query("seed");
      const steps = await deps.experimentSteps.list(record.id, { arm: c.req.query("arm"), seed: seed === undefined ? undefined : Number(seed) });
      return c.json({ id: record.id, steps });
    })
    .get("/:id/metrics", async (c) => {
      const record = await ownExperiment(c.req.param("id"), await requireScope(c, "experiments", deps));
      return c.json({ id: record.id, status: record.status, results: record.results, summary: record.summary ?? null });
    });

  /** An experiment is visible to the key that started it (and to admin keys) only. */
  const ownExperiment = async (id: string, key: { id: string; scopes: string[] }) => {
    const record = await deps.experiments.get(id);
    if (!record || (record.keyId !== key.id && !key.scopes.includes("admin"))) throw new NotFoundError("experiment", id);
    return record;
  };

  const decisions = new Hono().get("/:id", async (c) => {
    await requireScope(c, "route", deps);
    const d = await deps.decisions.get(c.req.param("id"));
    if (!d) throw new NotFoundError("decision", c.req.param("id"));
    return c.json(d);
  });

  return new Hono()
    .use(meterCompute(deps))
    .get("/health", (c) => c.json({ ok: true }))
    .get("/v1/usage", async (c) => {
      const key = await authenticate(c.req.header("authorization"), deps.keys);
      return c.json({ keyId: key.id, usage: await deps.meter.get(key.id), requestQuota: key.requestQuota ?? null });
    })
    .get("/openapi.json", (c) => c.json(openApiDocument()))
    .route("/v1/route", route)
    .route("/v1/pools", pools)
    .route("/v1/profiles", profiles)
    .route("/v1/decisions", decisions)
    .route("/v1/rescues", rescues)
    .route("/v1/experiments", experiments)
    .onError(errorResponse);
}
