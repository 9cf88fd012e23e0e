import { ConflictError } from "../errors.ts";
import { EpisodeClosedError } from "./errors.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import type { Task } from "../task.ts";
import { ScopedLru } from "../util/scoped-lru.ts";
import { matchConversation, messageFingerprint, replyFingerprint, type ConversationMatch } from "./conversation.ts";
import { forcedSubmitReply, type ChatMsg } from "./chat-format.ts";
import type { EpisodeMeta, EpisodeStep, GatewayEpisodeStore, StoredEpisode, StoredOut } from "./episode-record.ts";
import { GatewayEpisode, type GatewayEpisodeInit } from "./episode.ts";
import type { RelayOut } from "./relay.ts";
import { restoreEpisode } from "./replay.ts";
import { trajectoryOf, type GatewayTrajectory } from "./trajectory.ts";

/**
 * The gateway's bounds, declared once: idle time, episode life, leases, live episodes kept in a process, and the
 * largest conversation.
 */
export const GATEWAY_LIMITS = {
  idleMs: 30 * 60_000,
  /** An episode older than this is closed however active (its items expire `retentionIdles` idle times later). */
  maxLifetimeMs: 24 * 3_600_000,
  /** A closed episode's trajectory stays readable this many idle times after its life ends. */
  retentionIdles: 10,
  /** How long one request may hold an episode (longer than one completion may take). */
  leaseMs: 150_000,
  /** How often a request polls for an episode another request holds. */
  leasePollMs: 100,
  /** Live episodes one process keeps ready (others are rebuilt from the store by replay). */
  maxLive: 1_000,
  maxLivePerKey: 100,
  /** The most episodes of one opening a continuing request without the episode header is compared with. */
  maxOpeningCandidates: 20,
  /** Conversations grow with every turn: the gateway reads bodies up to this size. */
  maxBodyBytes: 4 << 20,
} as const;
export type GatewayLimits = { -readonly [K in keyof typeof GATEWAY_LIMITS]: number };

/** What rebuilding an episode needs besides the store: its harness, the live endpoint and the environment's reading. */
export type EpisodeRuntime = Pick<GatewayEpisodeInit, "harness" | "upstream" | "observer" | "parseArguments">;

const echoOf = (out: StoredOut | undefined, submitTool: string): string | undefined =>
  out?.kind === "reply"
    ? replyFingerprint(out.turn.reply)
    : out?.kind === "forced-submit"
      ? replyFingerprint(forcedSubmitReply(submitTool))
      : undefined;

/** How `messages` stands to a stored episode's conversation (see `matchConversation`). */
export function matchStored(stored: StoredEpisode, messages: readonly ChatMsg[]): ConversationMatch {
  const recorded = stored.steps.flatMap((s) => s.messages.map(messageFingerprint));
  return matchConversation(recorded, echoOf(stored.steps.at(-1)?.out, stored.meta.submitTool), messages);
}

/** The status a stored episode has now: running past its idle time or its life reads as closed. */
export function statusOf(
  meta: EpisodeMeta,
  now: number,
  limits: Pick<GatewayLimits, "idleMs" | "maxLifetimeMs">,
): EpisodeMeta["status"] {
  if (meta.status !== "running") return meta.status;
  return now - meta.lastUsed > limits.idleMs || now - meta.startedAt > limits.maxLifetimeMs ? "closed" : "running";
}

/** A request's answer and what the endpoint spent on it (metered by the request, also when it failed). */
export interface Answer {
  out: RelayOut;
  spent: { turns: number; tokens: number };
}
const NOTHING = { turns: 0, tokens: 0 };
const answerOf = (out: StoredOut): Answer => ({ out, spent: NOTHING });

/**
 * One request to a stored episode: its conversation, sampling fields, time, and how to reach its upstream and
 * environment.
 */
export interface EpisodeRequest {
  messages: readonly ChatMsg[];
  params: Readonly<Record<string, unknown>>;
  now: number;
  runtime: () => Promise<EpisodeRuntime>;
}

/**
 * The gateway's episodes: kept in a store between requests (DynamoDB when deployed), so any API
 * container continues any episode, and a process restart loses none; the episodes a process
 * served last stay live in it (a bounded cache, per key) and are checked against the store's
 * step count on every request, else rebuilt by replay (`restoreEpisode`). A request holds its
 * episode with a lease; its step is written only if no other request wrote that step, so two
 * requests never both advance an episode: a second one that repeats the first gets its answer,
 * anything else a 409.
 */
export class GatewayEpisodes {
  readonly limits: GatewayLimits;
  private readonly live: ScopedLru<{ episode: GatewayEpisode; steps: number }>;

  constructor(
    readonly store: GatewayEpisodeStore,
    limits: Partial<GatewayLimits> = {},
    /** Waits for another request's lease (the rest of the class is told the time by its callers). */
    private readonly clock: Clock = systemClock,
  ) {
    this.limits = { ...GATEWAY_LIMITS, ...limits };
    this.live = new ScopedLru({ maxPerScope: this.limits.maxLivePerKey, maxTotal: this.limits.maxLive }, (_k, _id, e) =>
      e.episode.close(),
    );
  }

  /** The key's episode, unless it expired (the store's TTL may be late). */
  async load(keyId: string, id: string, now: number): Promise<StoredEpisode | undefined> {
    const stored = await this.store.load(keyId, id);
    return stored && stored.meta.expiresAt > now ? stored : undefined;
  }

  /**
   * The key's one episode with this opening whose conversation `messages` repeats or extends (the longest wins; a tie
   * is a 409).
   */
  async continued(
    keyId: string,
    opening: string,
    messages: readonly ChatMsg[],
    now: number,
  ): Promise<StoredEpisode | undefined> {
    const all = (await this.store.withOpening(keyId, opening, this.limits.maxOpeningCandidates)).filter(
      (e) => e.meta.expiresAt > now,
    );
    const matching = all.filter((e) => matchStored(e, messages) !== "mismatch");
    if (matching.length === 0) {
      if (all.length > 0)
        throw new ConflictError(
          "this request does not continue any of this key's gateway episodes that began with these messages (a message was changed or removed): start a new conversation",
        );
      return undefined;
    }
    const seen = (e: StoredEpisode) => e.steps.reduce((n, s) => n + s.messages.length, 0);
    const longest = matching.reduce((m, e) => Math.max(m, seen(e)), 0);
    const best = matching.filter((e) => seen(e) === longest);
    if (best.length > 1)
      throw new ConflictError(
        `this request continues ${best.length} of this key's gateway episodes equally well (the same messages and replies so far): send the x-harness-s-episode header the gateway answered with`,
      );
    return best[0];
  }

  /**
   * Starts an episode with the conversation's opening and stores it with its first step (a 409 when the id is taken
   * meanwhile).
   */
  async start(
    init: GatewayEpisodeInit,
    meta: Pick<EpisodeMeta, "poolId">,
    messages: readonly ChatMsg[],
    params: Readonly<Record<string, unknown>>,
    now: number,
  ): Promise<Answer> {
    const episode = new GatewayEpisode(init);
    const out = await episode.advance(messages, params);
    const spent = episode.takeSpent();
    if (out.kind === "upstream-error") {
      episode.close();
      return { out, spent };
    }
    const record: EpisodeMeta = {
      keyId: init.keyId,
      id: init.id,
      opening: init.opening,
      poolId: meta.poolId,
      harnessId: init.harness.id,
      systemText: init.harness.instruction.systemAppend,
      decisionId: init.decisionId,
      task: {
        id: init.task.id,
        family: init.task.family,
        instruction: init.task.instruction,
        tags: [...init.task.tags],
      },
      tools: init.tools.map((t) => ({ ...t })),
      submitTool: init.submitTool,
      seed: init.seed,
      startedAt: now,
      lastUsed: now,
      steps: 1,
      status: await settledStatus(episode),
      reward: null,
      leaseUntil: 0,
      expiresAt: now + this.limits.maxLifetimeMs + this.limits.retentionIdles * this.limits.idleMs,
    };
    const step = stepOf(0, messages, episode, 0, out, now);
    if (!(await this.store.create(record, step))) {
      episode.close();
      return { ...(await this.answerAfterRace(init.keyId, init.id, messages)), spent };
    }
    this.live.set(init.keyId, init.id, { episode, steps: 1 });
    return { out, spent };
  }

  /**
   * Moves a stored episode on by one request: a repeat of its last request gets its answer again;
   * an extension is answered under the episode's lease (waiting for another request that holds it).
   */
  async advance(stored: StoredEpisode, request: EpisodeRequest): Promise<Answer> {
    const { messages, now } = request;
    const { keyId, id } = stored.meta;
    const status = statusOf(stored.meta, now, this.limits);
    const match = matchStored(stored, messages);
    const last = stored.steps.at(-1)?.out;
    if (match === "repeat" && last) return answerOf(last);
    if (status === "closed" || status === "failed") {
      if (stored.meta.status === "running") await this.store.update(keyId, id, { status });
      this.forget(keyId, id);
      throw new EpisodeClosedError(
        id,
        status === "failed" ? "it failed" : "it was closed (idle too long, or past its life)",
      );
    }
    if (status === "ended")
      return { out: { kind: "ended", reason: last?.kind === "ended" ? last.reason : "submitted" }, spent: NOTHING };
    if (match === "mismatch") throw mismatch(id);
    const holder = `${now}-${Math.random().toString(36).slice(2)}`;
    const meta = await this.store.lease(keyId, id, holder, now, now + this.limits.leaseMs);
    if (!meta) return this.answerAfterRace(keyId, id, messages);
    if (meta.steps !== stored.steps.length) {
      await this.store.release(keyId, id, holder);
      return this.answerAfterRace(keyId, id, messages);
    }
    return this.advanceHeld(stored, holder, request);
  }

  private async advanceHeld(
    stored: StoredEpisode,
    holder: string,
    { messages, params, now, runtime }: EpisodeRequest,
  ): Promise<Answer> {
    const { keyId, id } = stored.meta;
    let episode: GatewayEpisode | undefined;
    try {
      const cached = this.live.get(keyId, id);
      episode =
        cached?.steps === stored.steps.length
          ? cached.episode
          : await restoreEpisode(stored, { ...initOf(stored), ...(await runtime()) });
      const turnsBefore = episode.turns.length;
      const seen = episode.seen;
      const out = await episode.advance(messages, params);
      const spent = episode.takeSpent();
      if (out.kind === "upstream-error") {
        this.forget(keyId, id);
        await this.store.release(keyId, id, holder);
        return { out, spent };
      }
      const n = stored.steps.length;
      const step = stepOf(n, messages.slice(seen), episode, turnsBefore, out, now);
      if (
        !(await this.store.append(keyId, id, step, {
          status: await settledStatus(episode),
          lastUsed: now,
          expiresAt: stored.meta.expiresAt,
        }))
      ) {
        this.forget(keyId, id);
        return { ...(await this.answerAfterRace(keyId, id, messages)), spent };
      }
      this.live.set(keyId, id, { episode, steps: n + 1 });
      return { out, spent };
    } catch (err) {
      if (episode) this.forget(keyId, id);
      await this.store.release(keyId, id, holder).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Another request holds or moved the episode: wait for it (up to a lease), then answer a repeat with its answer,
   * anything else 409.
   */
  private async answerAfterRace(keyId: string, id: string, messages: readonly ChatMsg[]): Promise<Answer> {
    const deadline = this.clock.now() + this.limits.leaseMs;
    for (;;) {
      const stored = await this.store.load(keyId, id);
      if (!stored) throw new ConflictError(`gateway episode ${id} is being started by another request`);
      const now = this.clock.now();
      const held = stored.meta.leaseUntil > now && stored.meta.leaseHolder !== undefined;
      const last = stored.steps.at(-1)?.out;
      if (!held || now > deadline) {
        if (matchStored(stored, messages) === "repeat" && last) return answerOf(last);
        throw new ConflictError(
          held
            ? `a request of gateway episode ${id} is still being answered`
            : `another request moved gateway episode ${id} on meanwhile: this one neither repeats it nor continues from there`,
        );
      }
      await this.clock.sleep(this.limits.leasePollMs);
    }
  }

  /** The key's episode as a trajectory, or undefined. */
  async trajectory(keyId: string, id: string, now: number): Promise<GatewayTrajectory | undefined> {
    const stored = await this.load(keyId, id, now);
    if (!stored) return undefined;
    const m = stored.meta;
    return trajectoryOf({
      id: m.id,
      taskId: m.task.id,
      harnessId: m.harnessId,
      decisionId: m.decisionId,
      systemText: m.systemText,
      status: statusOf(m, now, this.limits),
      reward: m.reward,
      turns: stored.steps.flatMap((s) => s.turns),
    });
  }

  async setReward(keyId: string, id: string, reward: number, now: number): Promise<GatewayTrajectory | undefined> {
    if (!(await this.store.update(keyId, id, { reward }))) return undefined;
    return this.trajectory(keyId, id, now);
  }

  /** Ends the episodes live in this process (the gateway stops); the store keeps them. */
  closeAll(): void {
    for (const [keyId, id] of [...this.live.all()]) this.forget(keyId, id);
  }

  private forget(keyId: string, id: string): void {
    this.live.peek(keyId, id)?.episode.close();
    this.live.delete(keyId, id);
  }
}

const mismatch = (id: string) =>
  new ConflictError(
    `this request does not continue gateway episode ${id}: a continuing request holds every message of the conversation so far unchanged, then the reply the gateway gave, then the agent's new messages; start a new conversation (or name another episode) instead`,
  );

function stepOf(
  n: number,
  messages: readonly ChatMsg[],
  episode: GatewayEpisode,
  turnsBefore: number,
  out: Exclude<RelayOut, { kind: "upstream-error" }>,
  now: number,
): EpisodeStep {
  return {
    n,
    messages: messages.map((m) => ({ ...m })),
    turns: episode.turns.slice(turnsBefore).map((t) => ({ ...t })),
    out,
    at: now,
  };
}

/**
 * The episode's status once a request's answer has settled it (an ending `runEpisode` settles before the next turn of
 * the event loop).
 */
async function settledStatus(episode: GatewayEpisode): Promise<EpisodeMeta["status"]> {
  await new Promise((resolve) => setImmediate(resolve));
  return episode.status;
}

/**
 * A gateway episode's task: what the agent's first request says (the rest is the environment's, which the gateway never
 * sees).
 */
export function gatewayTask(t: EpisodeMeta["task"]): Task {
  return {
    id: t.id,
    family: t.family,
    split: "train",
    instruction: t.instruction,
    tags: [...t.tags],
    requirements: [],
    cues: [],
    params: {},
  };
}

/**
 * The parts of an episode's init the store holds (the preamble: the first request's messages before its first user
 * message).
 */
function initOf(stored: StoredEpisode): Omit<GatewayEpisodeInit, keyof EpisodeRuntime> {
  const { meta } = stored;
  const opening = stored.steps[0]?.messages ?? [];
  return {
    id: meta.id,
    keyId: meta.keyId,
    opening: meta.opening,
    decisionId: meta.decisionId,
    preamble: opening.slice(
      0,
      Math.max(
        0,
        opening.findIndex((m) => m.role === "user"),
      ),
    ),
    tools: meta.tools,
    submitTool: meta.submitTool,
    seed: meta.seed,
    task: gatewayTask(meta.task),
  };
}
