import { createHash } from "node:crypto";
import { ConflictError, EpisodeClosedError, NotFoundError, ValidationError } from "../errors.ts";
import { RouteRequest, routeTask, type RouteTaskDeps } from "../service/route-task.ts";
import type { Task } from "../task.ts";
import { hash32 } from "../util/rng.ts";
import type { RoutingDecision } from "../voting/router.ts";
import type { ChatMsg, ToolBinding } from "./chat-format.ts";
import { samplingParams, toChat, type GatewayChatRequest, type GatewayRequestMeta } from "./chat-request.ts";
import { openingFingerprint } from "./conversation.ts";
import { GatewayEpisode } from "./episode.ts";
import type { GatewayEpisodes } from "./episodes.ts";
import type { ObserverFactory, RelayOut } from "./relay.ts";
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
  onSpend?: Parameters<typeof routeTask>[3],
): Promise<{ out: RelayOut; episode: GatewayEpisode; decision?: RoutingDecision }> {
  const messages = req.messages.map(toChat);
  const firstUser = messages.findIndex((m) => m.role === "user");
  if (firstUser < 0) throw new ValidationError("request body", ["messages: a conversation starts with a user message (the task)"]);
  const opening = openingFingerprint(keyId, messages.slice(0, firstUser + 1));
  const continues = messages.some((m) => m.role === "assistant");
  deps.episodes.sweep(deps.clock.now());
  const found = meta.episode ? deps.episodes.get(keyId, meta.episode) : continues ? continuedEpisode(deps.episodes, keyId, opening, messages) : undefined;
  const live = found !== undefined && found.status !== "closed" && found.status !== "failed";
  if (found && (continues || (live && found.match(messages) === "repeat"))) return { out: await found.advance(messages, samplingParams(req), deps.clock.now()), episode: found };
  if (continues)
    throw new EpisodeClosedError(
      meta.episode ?? "(unnamed)",
      "the gateway holds no episode for this conversation (it ended long ago, idled out, or the gateway restarted): start the conversation again",
    );
  if (found?.status === "running") throw new ConflictError(`gateway episode ${found.id} is running another conversation: name a new episode for this one`);
  const id = meta.episode ?? `gw_${opening.slice(0, 16)}${createHash("sha256").update(deps.newId()).digest("hex").slice(0, 16)}`;
  return startEpisode(req, messages, firstUser, { id, opening }, meta, keyId, deps, onSpend);
}

/** The key's one episode with this opening whose recorded conversation `messages` repeats or extends (the longest recorded wins). */
function continuedEpisode(episodes: GatewayEpisodes, keyId: string, opening: string, messages: readonly ChatMsg[]): GatewayEpisode | undefined {
  const matching = episodes.withOpening(keyId, opening).filter((e) => e.match(messages) !== "mismatch");
  if (matching.length === 0) {
    if (episodes.withOpening(keyId, opening).length > 0)
      throw new ConflictError(
        "this request does not continue any of this key's gateway episodes that began with these messages (a message was changed or removed): start a new conversation",
      );
    return undefined;
  }
  const longest = Math.max(...matching.map((e) => e.seen));
  const best = matching.filter((e) => e.seen === longest);
  if (best.length > 1)
    throw new ConflictError(
      `this request continues ${best.length} of this key's gateway episodes equally well (the same messages and replies so far): send the x-harness-s-episode header the gateway answered with`,
    );
  return best[0];
}

async function startEpisode(
  req: GatewayChatRequest,
  messages: ChatMsg[],
  firstUser: number,
  name: { id: string; opening: string },
  meta: GatewayRequestMeta,
  keyId: string,
  deps: GatewayDeps,
  onSpend: Parameters<typeof routeTask>[3],
) {
  if (firstUser !== messages.length - 1) throw new ValidationError("request body", ["messages: a new conversation ends with its first user message (the task)"]);
  const tools: ToolBinding[] = (req.tools ?? []).map((t) => ({ ...t.function, action: t.function.name === deps.submitTool ? "submit" : t.function.name }));
  const task: Task = {
    id: meta.taskId ?? name.id,
    family: meta.family ?? deps.defaultFamily,
    split: "train",
    instruction: messages[firstUser]!.content ?? "",
    tags: meta.tags,
    requirements: [],
    cues: [],
    params: {},
  };
  const decision = await routeTask(
    RouteRequest.parse({ poolId: deps.poolId, task: { id: task.id, family: task.family, tags: task.tags }, k: 1, includeBase: true }),
    deps,
    keyId,
    onSpend,
  );
  const pool = await deps.pools.get(deps.poolId);
  const harness = pool && [pool.base, ...pool.siblings].find((h) => h.id === decision.chosen[0]);
  if (!harness) throw new NotFoundError("harness", decision.chosen[0] ?? "(none)");
  const episode = new GatewayEpisode({
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
  });
  deps.episodes.add(episode);
  return { out: await episode.advance(messages, samplingParams(req), deps.clock.now()), episode, decision };
}
