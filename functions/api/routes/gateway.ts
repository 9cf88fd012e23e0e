import { $, createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import {
  GATEWAY_LIMITS,
  GatewayChatRequest,
  GatewayRequestMeta,
  GatewayTrajectory,
  gatewayChat,
} from "@harness-s/core/gateway";
import { NotConfiguredError, NotFoundError, ValidationError, formatIssues } from "@harness-s/core";
import type { ApiDeps, GatewaySettings } from "../deps.ts";
import { apiRouter, withMiddleware } from "../http.ts";
import { readBody } from "../middleware/body.ts";
import { usageOf } from "../middleware/metering.ts";
import { requireScope } from "../middleware/scope.ts";
import { IdPath, bodyErrors, error, errors, jsonBody, jsonOf, notFound } from "../openapi-parts.ts";
import { completionFor, sseOf } from "./gateway-replies.ts";

export const GATEWAY_HEADERS = {
  episode: "x-harness-s-episode",
  taskId: "x-harness-s-task-id",
  family: "x-harness-s-task-family",
  tags: "x-harness-s-task-tags",
} as const;
const Reward = z.object({ reward: z.number().finite(), success: z.boolean().optional() });
const header = (description: string) => ({ description, schema: { type: "string" as const } });

/** `/v1/gateway`: the Rank-1 harness gateway (OpenAI-compatible) and the episodes it records. */
export const gatewayRoutes = {
  chat: createRoute({
    method: "post",
    path: "/chat/completions",
    operationId: "gatewayChatCompletions",
    tags: ["gateway"],
    summary:
      "An OpenAI chat completion under the harness routed for this episode (Rank-1); the model endpoint behind the gateway answers",
    description: `Point an agent's OpenAI client here. Optional headers: ${GATEWAY_HEADERS.episode} (else the conversation's opening messages key the episode), ${GATEWAY_HEADERS.taskId}, ${GATEWAY_HEADERS.family}, ${GATEWAY_HEADERS.tags} (comma-separated), the task's features the router reads. "stream": true is answered as server-sent events once the reply is complete (the harness reads a reply before the agent may act on it).`,
    request: { body: jsonBody(GatewayChatRequest) },
    responses: {
      200: {
        ...jsonOf(
          "the model's reply as its endpoint gave it (one tool call at most), or the harness's end-of-episode message",
          z.looseObject({}),
        ),
        headers: {
          "x-harness-s-harness": header("the harness this episode runs under"),
          "x-harness-s-decision": header("the routing decision that chose it"),
          "x-harness-s-episode": header("the episode's id (GET /v1/gateway/episodes/{id})"),
        },
      },
      ...errors,
      409: error("another request of this episode is still being answered"),
      410: error(
        "EPISODE_CLOSED: the episode idled out, failed, expired, or cannot be replayed here (its harness changed); start the conversation again",
      ),
      501: error(
        "this deployment runs no gateway (set the GatewayConfig secret, or run harness-s serve --gateway-upstream URL)",
      ),
      400: error(
        "VALIDATION_FAILED: a bad body or header; UPSTREAM_REJECTED: the model endpoint refused the request as sent (a sampling parameter, its length)",
      ),
      502: error("UPSTREAM_FAILED: the model endpoint failed; send the same request again and the episode goes on"),
      ...bodyErrors,
    },
  }),
  episode: createRoute({
    method: "get",
    path: "/episodes/{id}",
    operationId: "getGatewayEpisode",
    tags: ["gateway"],
    summary:
      "A gateway episode as a trainable trajectory: its harness, each model turn, protocol v2 datums (harness insertions masked out)",
    request: { params: IdPath },
    responses: {
      200: jsonOf("the trajectory", GatewayTrajectory),
      ...notFound("gateway episode"),
      ...errors,
      501: error("no gateway here"),
    },
  }),
  reward: createRoute({
    method: "post",
    path: "/episodes/{id}/reward",
    operationId: "reportGatewayReward",
    tags: ["gateway"],
    summary: "Report how the agent's episode scored (the datums' advantage until you centre it over a group)",
    request: { params: IdPath, body: jsonBody(Reward) },
    responses: {
      200: jsonOf("the trajectory with its reward", GatewayTrajectory),
      ...notFound("gateway episode"),
      ...errors,
      501: error("no gateway here"),
      ...bodyErrors,
    },
  }),
};

/** The largest conversation the gateway reads (its settings', else {@link GATEWAY_LIMITS}). */
export const gatewayBodyBytes = (gateway: Pick<GatewaySettings, "maxBodyBytes">): number =>
  gateway.maxBodyBytes ?? GATEWAY_LIMITS.maxBodyBytes;

function gatewayOf(deps: ApiDeps) {
  if (!deps.gateway)
    throw new NotConfiguredError(
      "this deployment runs no gateway: set its GatewayConfig secret (deployed) or run harness-s serve --gateway-upstream URL",
    );
  return { ...deps, ...deps.gateway };
}

function metaOf(c: Context): GatewayRequestMeta {
  const h = (name: string) => c.req.header(name) || undefined;
  const parsed = GatewayRequestMeta.safeParse({
    episode: h(GATEWAY_HEADERS.episode),
    taskId: h(GATEWAY_HEADERS.taskId),
    family: h(GATEWAY_HEADERS.family),
    tags:
      h(GATEWAY_HEADERS.tags)
        ?.split(",")
        .map((t) => t.trim())
        .filter(Boolean) ?? [],
  });
  if (!parsed.success) throw new ValidationError("gateway headers", formatIssues(parsed.error.issues));
  return parsed.data;
}

const found = <T>(value: T | undefined, id: string): T => {
  if (value === undefined) throw new NotFoundError("gateway episode", id);
  return value;
};

export const gatewayApp = (deps: ApiDeps) =>
  $(apiRouter().use(requireScope(deps, "gateway")))
    // A conversation is read under the gateway's own limit, and only where there is a gateway (a 501 first).
    .openapi(
      withMiddleware(
        gatewayRoutes.chat,
        readBody(deps, GatewayChatRequest, () => gatewayBodyBytes(gatewayOf(deps))),
      ),
      async (c) => {
        const [body, gw] = [c.var.body, gatewayOf(deps)];
        const { out, episode } = await gatewayChat(body, metaOf(c), c.var.key.id, gw, usageOf(c));
        if (out.kind === "upstream-error") throw out.error;
        c.header("x-harness-s-harness", episode.harnessId);
        c.header("x-harness-s-decision", episode.decisionId);
        c.header("x-harness-s-episode", episode.id);
        const completion = completionFor(out, body.model, gw.submitTool);
        if (body.stream) return sseOf(c, completion, body.stream_options?.include_usage === true) as never;
        return c.json(completion, 200);
      },
    )
    .openapi(gatewayRoutes.episode, async (c) => {
      const { id } = c.req.valid("param");
      return c.json(found(await gatewayOf(deps).episodes.trajectory(c.var.key.id, id, deps.clock.now()), id), 200);
    })
    .openapi(withMiddleware(gatewayRoutes.reward, readBody(deps, Reward)), async (c) => {
      const { id } = c.req.valid("param");
      return c.json(
        found(await gatewayOf(deps).episodes.setReward(c.var.key.id, id, c.var.body.reward, deps.clock.now()), id),
        200,
      );
    });
