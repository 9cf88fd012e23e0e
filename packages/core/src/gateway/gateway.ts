import { createHash } from "node:crypto";
import type { UsageSink } from "../billing/usage.ts";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { EpisodeClosedError } from "./errors.ts";
import type { EpisodeMeta } from "./episode-record.ts";
import { type RouteRequest, routeTask, type RouteTaskDeps } from "../routing/route-task.ts";
import { harnessById, harnessIds } from "../harness/pool.ts";
import { hash32 } from "../util/rng.ts";
import type { RoutingDecision } from "../voting/router.ts";
import type { ChatMsg, ToolBinding } from "./chat-format.ts";
import { samplingParams, toChat, type GatewayChatRequest, type GatewayRequestMeta } from "./chat-request.ts";
import { openingFingerprint } from "./conversation.ts";
import {
  gatewayTask,
  matchStored,
  statusOf,
  type Answer,
  type EpisodeRuntime,
  type GatewayEpisodes,
} from "./episodes.ts";
import type { ObserverFactory } from "./relay.ts";
import type { UpstreamChat } from "./upstream-turn.ts";

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

/**
 * The Rank-1 harness gateway's use-case behind `POST /v1/gateway/chat/completions`: a
 * conversation's first request routes its task to one harness of the pool and starts an
 * episode under it; every request moves that episode one reply on. Episodes belong to the key
 * that opened them. One named by the `x-harness-s-episode` header is that key's episode of that
 * name; without the header, a conversation's first request always starts an episode of its own,
 * and a continuing request goes to the one episode whose recorded conversation it repeats or
 * extends exactly (never a silent merge: two equally good matches, or none, are refused).
 *
 * @example
 * const { out, episode } = await gatewayChat(GatewayChatRequest.parse(body), GatewayRequestMeta.parse({ family: "dbbench" }), "k1", deps);
 */
export async function gatewayChat(
  req: GatewayChatRequest,
  meta: GatewayRequestMeta,
  keyId: string,
  deps: GatewayDeps,
  used?: UsageSink,
): Promise<GatewayAnswer> {
  const answer = await chat(req, meta, keyId, deps, used);
  // What the endpoint spent on this turn; the routing's ballots and voter tokens were told as spent.
  used?.({ gatewayTurns: answer.spent.turns, gatewayTokens: answer.spent.tokens });
  return answer;
}

async function chat(
  req: GatewayChatRequest,
  meta: GatewayRequestMeta,
  keyId: string,
  deps: GatewayDeps,
  used: UsageSink | undefined,
): Promise<GatewayAnswer> {
  const messages = req.messages.map(toChat);
  const firstUser = messages.findIndex((m) => m.role === "user");
  if (firstUser < 0)
    throw new ValidationError("request body", ["messages: a conversation starts with a user message (the task)"]);
  const opening = openingFingerprint(keyId, messages.slice(0, firstUser + 1));
  const continues = messages.some((m) => m.role === "assistant");
  const now = deps.clock.now();
  const found = meta.episode
    ? await deps.episodes.load(keyId, meta.episode, now)
    : continues
      ? await deps.episodes.continued(keyId, opening, messages, now)
      : undefined;
  const status = found && statusOf(found.meta, now, deps.episodes.limits);
  const live = status === "running" || status === "ended";
  if (found && (continues || (live && matchStored(found, messages) === "repeat"))) {
    const answer = await deps.episodes.advance(found, {
      messages,
      params: samplingParams(req),
      now,
      runtime: () => runtimeOf(found.meta, deps),
    });
    return { ...answer, episode: infoOf(found.meta) };
  }
  if (continues)
    throw new EpisodeClosedError(
      meta.episode ?? "(unnamed)",
      "the gateway holds no episode for this conversation (it ended long ago or expired): start the conversation again",
    );
  if (status === "running")
    throw new ConflictError(
      `gateway episode ${found!.meta.id} is running another conversation: name a new episode for this one`,
    );
  const id =
    meta.episode ?? `gw_${opening.slice(0, 16)}${createHash("sha256").update(deps.newId()).digest("hex").slice(0, 16)}`;
  return startEpisode(req, messages, firstUser, { id, opening }, meta, keyId, deps, used);
}

/**
 * What a gateway request was answered with, the episode it moved, what the endpoint spent, and the routing decision of
 * a new episode.
 */
export interface GatewayAnswer extends Answer {
  episode: { id: string; harnessId: string; decisionId: string };
  decision?: RoutingDecision;
}

const infoOf = (m: EpisodeMeta) => ({ id: m.id, harnessId: m.harnessId, decisionId: m.decisionId });

/**
 * What rebuilding a stored episode needs from this process: its harness (pools are immutable under their id), the
 * endpoint, the observer.
 */
async function runtimeOf(meta: EpisodeMeta, deps: GatewayDeps): Promise<EpisodeRuntime> {
  const pool = await deps.pools.get(meta.poolId);
  if (!pool || !harnessIds(pool).includes(meta.harnessId))
    throw new EpisodeClosedError(meta.id, `its harness ${meta.harnessId} of pool ${meta.poolId} is gone`);
  return {
    harness: harnessById(pool, meta.harnessId),
    upstream: deps.upstream,
    observer: deps.observerFor(gatewayTask(meta.task)),
    ...(deps.parseArguments ? { parseArguments: deps.parseArguments } : {}),
  };
}

async function startEpisode(
  req: GatewayChatRequest,
  messages: ChatMsg[],
  firstUser: number,
  name: { id: string; opening: string },
  meta: GatewayRequestMeta,
  keyId: string,
  deps: GatewayDeps,
  used: UsageSink | undefined,
): Promise<GatewayAnswer> {
  if (firstUser !== messages.length - 1)
    throw new ValidationError("request body", [
      "messages: a new conversation ends with its first user message (the task)",
    ]);
  const tools: ToolBinding[] = (req.tools ?? []).map((t) => ({
    ...t.function,
    action: t.function.name === deps.submitTool ? "submit" : t.function.name,
  }));
  const task = gatewayTask({
    id: meta.taskId ?? name.id,
    family: meta.family ?? deps.defaultFamily,
    instruction: messages[firstUser]!.content ?? "",
    tags: meta.tags,
  });
  const decision = await routeTask(
    {
      poolId: deps.poolId,
      task: { id: task.id, family: task.family, tags: [...task.tags] },
      failureTags: [],
      failedEvents: [],
      k: 1,
      includeBase: true,
    } satisfies RouteRequest,
    deps,
    keyId,
    used,
  );
  const pool = await deps.pools.get(deps.poolId);
  if (!pool) throw new NotFoundError("pool", deps.poolId);
  const harness = harnessById(pool, decision.chosen[0] ?? "(none)");
  const init = {
    ...name,
    keyId,
    task,
    harness,
    decisionId: decision.id,
    preamble: messages.slice(0, firstUser),
    tools,
    submitTool: deps.submitTool,
    upstream: deps.upstream,
    observer: deps.observerFor(task),
    seed: hash32(name.id),
    ...(deps.parseArguments ? { parseArguments: deps.parseArguments } : {}),
  };
  const answer = await deps.episodes.start(
    init,
    { poolId: deps.poolId },
    messages,
    samplingParams(req),
    deps.clock.now(),
  );
  return { ...answer, episode: { id: name.id, harnessId: harness.id, decisionId: decision.id }, decision };
}
