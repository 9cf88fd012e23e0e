import { createHash } from "node:crypto";
import { z } from "zod";
import { EpisodeClosedError, NotFoundError, ValidationError } from "../errors.ts";
import { Id, Name } from "../names.ts";
import { RouteRequest, routeTask, type RouteTaskDeps } from "../service/route-task.ts";
import type { Task } from "../task.ts";
import { hash32 } from "../util/rng.ts";
import type { RoutingDecision } from "../voting/router.ts";
import type { ChatMsg, ToolBinding } from "./chat-format.ts";
import { GatewayEpisode } from "./episode.ts";
import type { GatewayEpisodes } from "./episodes.ts";
import type { ObserverFactory, RelayOut } from "./relay.ts";
import type { UpstreamChat } from "./upstream-turn.ts";

const Text = z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() })), z.null()]);
const IncomingMessage = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: Text.optional(),
  tool_calls: z.array(z.looseObject({ id: z.string(), type: z.literal("function"), function: z.object({ name: z.string(), arguments: z.string() }) })).optional(),
  tool_call_id: z.string().optional(),
});
const IncomingTool = z.looseObject({
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1).max(64), description: z.string().max(8_000).default(""), parameters: z.record(z.string(), z.unknown()).default({}) }),
});

/** An OpenAI chat completion request as an agent sends it to the gateway; sampling fields pass through. */
export const GatewayChatRequest = z.looseObject({
  model: z.string().min(1).max(200),
  messages: z.array(IncomingMessage).min(1).max(2_000),
  tools: z.array(IncomingTool).max(128).optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).optional(),
});
export type GatewayChatRequest = z.infer<typeof GatewayChatRequest>;

/** What an agent may tell the gateway in headers (`x-harness-s-…`): the episode and the task's features. */
export const GatewayRequestMeta = z.object({
  episode: Id.optional(),
  taskId: Id.optional(),
  family: Name.optional(),
  tags: z.array(Name).max(50).default([]),
});
export type GatewayRequestMeta = z.infer<typeof GatewayRequestMeta>;

export interface GatewayDeps extends RouteTaskDeps {
  upstream: UpstreamChat;
  episodes: GatewayEpisodes;
  /** The pool whose harnesses the gateway routes between (Rank-1: H0 is a candidate). */
  poolId: string;
  /** Reads the agent's tool outputs into the events and facts the harness's hooks need. */
  observerFor: ObserverFactory;
  /** The agent's tool that commits (`submit` for the commit gate), e.g. `commit_final_answer`. */
  submitTool: string;
  /** A task's family when the agent names none. */
  defaultFamily: string;
  parseArguments?: (raw: string) => Record<string, unknown>;
}

const textOf = (content: z.infer<typeof Text> | undefined): string | null =>
  content == null ? null : typeof content === "string" ? content : content.map((p) => p.text ?? "").join("");

const toChat = (m: z.infer<typeof IncomingMessage>): ChatMsg => ({
  role: m.role,
  content: textOf(m.content),
  ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: "function" as const, function: c.function })) } : {}),
  ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
});

/** The request's sampling parameters, forwarded to the model endpoint (messages, tools and streaming are the gateway's). */
function samplingParams(req: GatewayChatRequest): Record<string, unknown> {
  const { messages: _m, tools: _t, stream: _s, stream_options: _o, tool_choice: _c, ...rest } = req;
  return rest;
}

/**
 * The Rank-1 harness gateway's use-case behind `POST /v1/gateway/chat/completions`: a
 * conversation's first request routes its task to one harness of the pool and starts an
 * episode under it; every request moves that episode one reply on. Episodes are keyed by the
 * `x-harness-s-episode` header, else by the key and the conversation's opening messages.
 *
 * @example
 * const { out, episode } = await gatewayChat(GatewayChatRequest.parse(body), GatewayRequestMeta.parse({ family: "dbbench" }), "k1", deps);
 */
export async function gatewayChat(
  req: GatewayChatRequest,
  meta: GatewayRequestMeta,
  keyId: string,
  deps: GatewayDeps,
): Promise<{ out: RelayOut; episode: GatewayEpisode; decision?: RoutingDecision }> {
  const messages = req.messages.map(toChat);
  const firstUser = messages.findIndex((m) => m.role === "user");
  if (firstUser < 0) throw new ValidationError("request body", ["messages: a conversation starts with a user message (the task)"]);
  const key =
    meta.episode ??
    `gw_${createHash("sha256")
      .update(JSON.stringify([keyId, messages.slice(0, firstUser + 1)]))
      .digest("hex")
      .slice(0, 32)}`;
  deps.episodes.sweep(deps.clock.now());
  const found = deps.episodes.get(key);
  if (found && found.keyId !== keyId) throw new NotFoundError("gateway episode", key);
  const continues = messages.some((m) => m.role === "assistant");
  if (found && (continues || found.status === "running")) return { out: await found.advance(messages, samplingParams(req), deps.clock.now()), episode: found };
  if (continues)
    throw new EpisodeClosedError(key, "the gateway holds no episode for this conversation (it ended long ago, idled out, or the gateway restarted): start the conversation again");
  return startEpisode(req, messages, firstUser, key, meta, keyId, deps);
}

async function startEpisode(req: GatewayChatRequest, messages: ChatMsg[], firstUser: number, key: string, meta: GatewayRequestMeta, keyId: string, deps: GatewayDeps) {
  if (firstUser !== messages.length - 1) throw new ValidationError("request body", ["messages: a new conversation ends with its first user message (the task)"]);
  const tools: ToolBinding[] = (req.tools ?? []).map((t) => ({ ...t.function, action: t.function.name === deps.submitTool ? "submit" : t.function.name }));
  const task: Task = {
    id: meta.taskId ?? key,
    family: meta.family ?? deps.defaultFamily,
    split: "train",
    instruction: messages[firstUser]!.content ?? "",
    tags: meta.tags,
    requirements: [],
    cues: [],
    params: {},
  };
  const decision = await routeTask(RouteRequest.parse({ poolId: deps.poolId, task: { id: task.id, family: task.family, tags: task.tags }, k: 1, includeBase: true }), deps, keyId);
  const pool = await deps.pools.get(deps.poolId);
  const harness = pool && [pool.base, ...pool.siblings].find((h) => h.id === decision.chosen[0]);
  if (!harness) throw new NotFoundError("harness", decision.chosen[0] ?? "(none)");
  const episode = new GatewayEpisode({
    id: key,
    keyId,
    task,
    harness,
    decisionId: decision.id,
    preamble: messages.slice(0, firstUser),
    tools,
    upstream: deps.upstream,
    observer: deps.observerFor(task),
    seed: hash32(key),
    ...(deps.parseArguments ? { parseArguments: deps.parseArguments } : {}),
  });
  deps.episodes.add(episode);
  return { out: await episode.advance(messages, samplingParams(req), deps.clock.now()), episode, decision };
}
