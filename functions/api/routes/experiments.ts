import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import {
  ArmName,
  EXPERIMENT_LIMITS,
  ExperimentRecord,
  ExperimentRequest,
  ExperimentList,
  type ExperimentPlan,
  ExperimentStep,
  cancelExperiment,
  listExperiments,
  experimentStatus,
  startExperiment,
} from "@harness-s/core/experiment";
import { KEY_PAGE, KeyPageQuery, queryInteger } from "@harness-s/core";
import { PlotFile, experimentArtifact, experimentPlots } from "@harness-s/core/experiment";
import { JobBill, Quote } from "@harness-s/core/billing";
import { budgetedPricer } from "@harness-s/core/quoting";
import { ownedBy } from "@harness-s/core/access";
import type { ApiDeps } from "../deps.ts";
import { pricing } from "./account.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { requireScope } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound, overBudget } from "../openapi-parts.ts";

const record = ExperimentRecord.shape;
/** What `experimentStatus` answers: state, progress, usage and cost so far. */
const ExperimentStatus = z.object({
  id: z.string(),
  status: record.status,
  request: record.request,
  progress: record.progress,
  attempts: z.number().int(),
  cost: record.usage.extend({ usd: z.number() }),
  budget: z.object({ rollouts: z.number().int(), usd: z.number().optional() }).nullable(),
  quote: Quote.nullable(),
  actual: JobBill.nullable(),
  stopReason: z.string().nullable(),
  error: z.string().nullable(),
  errorCode: z.string().nullable().describe("the failure's stable code, where it failed"),
  createdAt: z.number(),
  updatedAt: z.number(),
});
const ExperimentSteps = z.object({ id: z.string(), steps: z.array(ExperimentStep) });
const ExperimentMetrics = z.object({
  id: z.string(),
  status: record.status,
  results: record.results,
  summary: record.summary.unwrap().nullable(),
});
const StepsQuery = z.object({ arm: ArmName.optional(), seed: queryInteger(0, Number.MAX_SAFE_INTEGER).optional() });
const forThisKey = notFound("experiment for this key");
const ExperimentPlots = z.object({
  id: z.string(),
  status: record.status,
  plots: z.array(z.object({ file: PlotFile, url: z.string().describe("the plot's path on this API") })),
});
/** A plot's file name, as the listing gives it. */
const PlotPath = z.object({
  id: IdPath.shape.id,
  file: PlotFile.describe("a plot's file name, as GET …/plots lists it"),
});
const PngBody = z.string().meta({ format: "binary" });
const notDeployed = { 501: error("NOT_CONFIGURED: this deployment keeps no experiment reports") };
/** What reading a run's report or plot answers besides the file. */
const artifactErrors = (what: "report" | "plot") => ({
  404: error(
    `NOT_FOUND: no such experiment for this key, or the run has no ${what} (the message says why: still running, or ended without one)`,
  ),
  ...errors,
  ...notDeployed,
});

/** `/v1/experiments`: paired experiments run by the coordinator. */
export const experimentRoutes = {
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listExperiments",
    tags: ["experiments"],
    summary:
      "The calling key's own runs, newest first, a page at a time: id, status, env, arm and seed counts, progress",
    description: `\`limit\` ≤ ${KEY_PAGE.maxLimit} (default ${KEY_PAGE.defaultLimit}); \`next\` is the cursor of the next page (pass it as \`cursor\`), null at the end. A key lists only the runs it started (an admin key too); a cursor from another key's or another list is a 400.`,
    request: { query: KeyPageQuery },
    responses: { 200: jsonOf("a page of the key's runs", ExperimentList), ...errors },
  }),
  start: createRoute({
    method: "post",
    path: "/",
    operationId: "startExperiment",
    tags: ["experiments"],
    summary: "Start a paired experiment (arms × seeds) with a rollout budget cap; the coordinator runs it",
    description:
      "`env` is where it runs: `embedded` (the default), a benchmark family this deployment runs (`dbbench`, `appworld`, `swe-gym`), or the caller's own OpenEnv server `{kind: \"openenv\", url, secretHeader?, tasks, poolId?}` with its tasks as data in the train, dev and held-out splits (each split at least one task). A caller's URL goes through the outbound guard before anything is recorded (URL_NOT_ALLOWED, 400); `poolId` names a pool the key evolved (`POST /v1/pools`; another key's is a 404), else one is evolved first on the dev split. An environment or model this deployment does not offer is a 400 naming what it runs; nothing is recorded or metered for a refused request.",
    request: { body: jsonBody(ExperimentRequest) },
    responses: {
      202: jsonOf("accepted: id, status, progress, cost so far", ExperimentStatus),
      ...overBudget,
      ...notFound("pool of this key (a caller's environment's poolId)"),
      ...errors,
      ...bodyErrors,
    },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getExperiment",
    tags: ["experiments"],
    summary: "Status, progress, usage and cost so far (stopped = budget cap reached)",
    request: { params: IdPath },
    responses: { 200: jsonOf("status", ExperimentStatus), ...forThisKey, ...errors },
  }),
  cancel: createRoute({
    method: "post",
    path: "/{id}/cancel",
    operationId: "cancelExperiment",
    tags: ["experiments"],
    summary: "Cancel a run: a queued one ends at once, a running one after its current step; finished units are kept",
    request: { params: IdPath },
    responses: { 200: jsonOf("status after the request", ExperimentStatus), ...forThisKey, ...errors },
  }),
  steps: createRoute({
    method: "get",
    path: "/{id}/steps",
    operationId: "listExperimentSteps",
    tags: ["experiments"],
    summary:
      "Each training step of the run (optionally ?arm=&seed=): rollouts so far and every group's outcome with the harnesses chosen",
    request: { params: IdPath, query: StepsQuery },
    responses: { 200: jsonOf("steps", ExperimentSteps), ...forThisKey, ...errors },
  }),
  metrics: createRoute({
    method: "get",
    path: "/{id}/metrics",
    operationId: "getExperimentMetrics",
    tags: ["experiments"],
    summary: "Per (arm, seed) results so far, and the summary once done",
    request: { params: IdPath },
    responses: { 200: jsonOf("metrics", ExperimentMetrics), ...forThisKey, ...errors },
  }),
  report: createRoute({
    method: "get",
    path: "/{id}/report",
    operationId: "getExperimentReport",
    tags: ["experiments"],
    summary:
      "The run's markdown report: arms with their spread over seeds, the paired comparison, acceptance figures, ablations",
    description:
      "Made by the CLI's code (`harness-s experiment`'s report.md, without its sweeps) when the run ends done, or stopped at its budget cap with finished (arm, seed) units (a note under the title says what its figures cover). A 404 says why a run has none.",
    request: { params: IdPath },
    responses: {
      200: {
        description:
          "the report; it links its plots by file name (curves.png, utilities.png) as the CLI writes them beside it: save them from GET …/plots/{file} into the same folder",
        content: { "text/markdown": { schema: z.string() } },
      },
      ...artifactErrors("report"),
    },
  }),
  plots: createRoute({
    method: "get",
    path: "/{id}/plots",
    operationId: "listExperimentPlots",
    tags: ["experiments"],
    summary: "The file names of the run's plots (none until it ends with a report), each with its URL",
    request: { params: IdPath },
    responses: { 200: jsonOf("plots", ExperimentPlots), ...forThisKey, ...errors, ...notDeployed },
  }),
  plot: createRoute({
    method: "get",
    path: "/{id}/plots/{file}",
    operationId: "getExperimentPlot",
    tags: ["experiments"],
    summary:
      "One of the run's plots as PNG (`curves.png`: H0 Avg@3 over training per arm; `utilities.png`: rescue utility by repair direction)",
    request: { params: PlotPath },
    responses: {
      200: { description: "the plot", content: { "image/png": { schema: PngBody } } },
      ...artifactErrors("plot"),
    },
  }),
};

export const experimentsApp = (deps: ApiDeps) => {
  /** An experiment is visible to the key that started it (and to admin keys) only. */
  const own = (id: string, key: { id: string; scopes: string[] }) =>
    ownedBy(deps.experiments, key, "experiment").get(id);
  return $(apiRouter().use(requireScope(deps, "experiments")))
    .openapi(experimentRoutes.list, async (c) =>
      c.json(await listExperiments(c.var.key.id, c.req.valid("query"), deps), 200),
    )
    .openapi(withMiddleware(experimentRoutes.start, readBody(deps, ExperimentRequest)), async (c) => {
      const [req, key] = [c.var.body, c.var.key];
      const slots = { meter: deps.meter, limit: deps.experimentsPerKey ?? EXPERIMENT_LIMITS.activePerKey };
      const priced = budgetedPricer(pricing(deps), key);
      const price = (plan: ExperimentPlan) => priced({ experiment: plan }, plan.budget?.usd);
      const started = await startExperiment(req, key.id, { ...deps, slots, price, newId: () => deps.newId("exp") });
      return c.json(experimentStatus(started, deps.prices), 202);
    })
    .openapi(experimentRoutes.get, async (c) => {
      const found = await own(c.req.valid("param").id, c.var.key);
      return c.json(
        experimentStatus(found, deps.prices, {
          usage: await deps.meter.job(found.id),
          priceList: pricing(deps).priceList,
        }),
        200,
      );
    })
    .openapi(experimentRoutes.cancel, async (c) =>
      c.json(experimentStatus(await cancelExperiment(c.req.valid("param").id, c.var.key, deps), deps.prices), 200),
    )
    .openapi(experimentRoutes.steps, async (c) => {
      const found = await own(c.req.valid("param").id, c.var.key);
      return c.json({ id: found.id, steps: await deps.experimentSteps.list(found.id, c.req.valid("query")) }, 200);
    })
    .openapi(experimentRoutes.metrics, async (c) => {
      const found = await own(c.req.valid("param").id, c.var.key);
      return c.json(
        { id: found.id, status: found.status, results: found.results, summary: found.summary ?? null },
        200,
      );
    })
    .openapi(experimentRoutes.report, async (c) => {
      const report = await experimentArtifact(c.req.valid("param").id, "report.md", c.var.key, deps);
      return c.body(new Uint8Array(report.bytes), 200, { "content-type": report.contentType }) as never;
    })
    .openapi(experimentRoutes.plots, async (c) => {
      const { record: found, plots } = await experimentPlots(c.req.valid("param").id, c.var.key, deps);
      return c.json(
        {
          id: found.id,
          status: found.status,
          plots: plots.map((file) => ({ file, url: `/v1/experiments/${found.id}/plots/${file}` })),
        },
        200,
      );
    })
    .openapi(experimentRoutes.plot, async (c) => {
      const { id, file } = c.req.valid("param");
      const plot = await experimentArtifact(id, file, c.var.key, deps);
      return c.body(new Uint8Array(plot.bytes), 200, { "content-type": plot.contentType }) as never;
    });
};
