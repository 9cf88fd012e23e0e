import { $, createRoute } from "@hono/zod-openapi";
import { z } from "zod";
import { AdaptiveChoice } from "@harness-s/core/training";
import {
  RESCUE_WAIT,
  RescueList,
  RescueRequest,
  RescueStatus,
  RescueWaitQuery,
  cancelRescue,
  listRescues,
  TrajectoryPage,
  TrajectoryQuery,
  rescueTrajectories,
  startRescue,
  waitForRescue,
} from "@harness-s/core/rescue";
import { budgetedPricer } from "@harness-s/core/quoting";
import { KEY_PAGE, KeyPageQuery } from "@harness-s/core";
import { poolsVisibleTo } from "@harness-s/core/pools";
import type { ApiDeps } from "../deps.ts";
import { pricing } from "./account.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { usageOf } from "../middleware/metering.ts";
import { requireScope } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound, overBudget } from "../openapi-parts.ts";

const RescueAccepted = z.object({
  id: z.string(),
  chosen: z.array(z.string()),
  expected: z.number().int(),
  /** With mode "adaptive": the option taken (siblings, resample under H0) and the estimates behind it. */
  adaptive: AdaptiveChoice.optional(),
});
/** An adaptive rescue that chose to spend nothing: no rescue was started. */
const RescueAdvised = z.object({
  chosen: z.array(z.string()).max(0),
  expected: z.literal(0),
  adaptive: AdaptiveChoice,
});

/** `/v1/rescues`: elastic rescue rollouts. */
export const rescueRoutes = {
  list: createRoute({
    method: "get",
    path: "/",
    operationId: "listRescues",
    tags: ["rescues"],
    summary:
      "The calling key's own rescues, newest first, a page at a time: id, status, pool, task, harness and slot counts",
    description: `\`limit\` ≤ ${KEY_PAGE.maxLimit} (default ${KEY_PAGE.defaultLimit}); \`next\` is the cursor of the next page (pass it as \`cursor\`), null at the end. A key lists only the rescues it started (an admin key too); a cursor from another key's or another list is a 400.`,
    request: { query: KeyPageQuery },
    responses: { 200: jsonOf("a page of the key's rescues", RescueList), ...errors },
  }),
  start: createRoute({
    method: "post",
    path: "/",
    operationId: "startRescue",
    tags: ["rescues"],
    summary: "Start an elastic rescue: route the failed task, fan its rollouts out to the dispatch workers",
    request: { body: jsonBody(RescueRequest) },
    responses: {
      202: jsonOf(
        "accepted: id, chosen harnesses, expected rollouts (with mode adaptive: the option taken and its estimates)",
        RescueAccepted,
      ),
      200: jsonOf(
        "mode adaptive chose to spend nothing on this group: no rescue was started (the option and its estimates say why)",
        RescueAdvised,
      ),
      ...notFound("pool or task"),
      ...overBudget,
      501: error("this deployment has no dispatch worker"),
      ...errors,
      ...bodyErrors,
    },
  }),
  get: createRoute({
    method: "get",
    path: "/{id}",
    operationId: "getRescue",
    tags: ["rescues"],
    summary: "Status, rewards and per-rollout outcomes of a rescue",
    description: `With \`wait\` (seconds, ≤ ${RESCUE_WAIT.maxSeconds}), answers once more than \`seen\` slots have finished (stored or given up on), the rescue is no longer running, or the wait is over: progress slot by slot without a polling loop.`,
    request: { params: IdPath, query: RescueWaitQuery },
    responses: {
      200: jsonOf(
        "status (failed: every slot is stored or given up on, and some were given up on: each with its code and reason)",
        RescueStatus,
      ),
      ...notFound("rescue"),
      ...errors,
    },
  }),
  cancel: createRoute({
    method: "post",
    path: "/{id}/cancel",
    operationId: "cancelRescue",
    tags: ["rescues"],
    summary: "Cancel a rescue: slots not started are never run, slots running finish and are kept",
    request: { params: IdPath },
    responses: { 200: jsonOf("its status after the cancel", RescueStatus), ...notFound("rescue"), ...errors },
  }),
  trajectories: createRoute({
    method: "get",
    path: "/{id}/trajectories",
    operationId: "getRescueTrajectories",
    tags: ["rescues"],
    summary:
      "A caller rescue's rollouts as token rows: prompt_ids, completion_ids, logprobs and loss_mask aligned (0 on environment text and every harness insertion), reward, harness, decision, weight_version",
    description:
      "Paginated by rollout index (`cursor`, `limit` ≤ 64; `next` is the cursor of the next page, null at the end). `context=base` re-renders each rescued completion under H0's prompt (no harness text) and re-scores it at your endpoint.",
    request: { params: IdPath, query: TrajectoryQuery },
    responses: { 200: jsonOf("a page of token rows", TrajectoryPage), ...notFound("rescue"), ...errors },
  }),
};

export const rescuesApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, "rescues")))
    .openapi(rescueRoutes.list, async (c) => c.json(await listRescues(c.var.key.id, c.req.valid("query"), deps), 200))
    .openapi(withMiddleware(rescueRoutes.start, readBody(deps, RescueRequest)), async (c) => {
      const [body, key] = [c.var.body, c.var.key];
      const priced = budgetedPricer(pricing(deps), key);
      const price = (req: RescueRequest) => priced({ rescue: req }, undefined);
      // A key routes only in pools it may see: another key's evolved pool is a 404.
      const job = await startRescue(
        body,
        { ...deps, price, pools: poolsVisibleTo(deps.pools, key) },
        key.id,
        usageOf(c),
      );
      if (job.adaptive && job.expected === 0)
        return c.json({ chosen: [], expected: 0 as const, adaptive: job.adaptive }, 200);
      return c.json(
        { id: job.id, chosen: job.chosen, expected: job.expected, ...(job.adaptive ? { adaptive: job.adaptive } : {}) },
        202,
      );
    })
    .openapi(rescueRoutes.get, async (c) =>
      c.json(await waitForRescue(c.req.valid("param").id, c.req.valid("query"), deps, c.var.key), 200),
    )
    .openapi(rescueRoutes.cancel, async (c) =>
      c.json(await cancelRescue(c.req.valid("param").id, deps, c.var.key), 200),
    )
    .openapi(rescueRoutes.trajectories, async (c) =>
      c.json(await rescueTrajectories(c.req.valid("param").id, c.req.valid("query"), deps, c.var.key), 200),
    );
