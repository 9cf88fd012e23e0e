import { EpisodeClosedError } from "./errors.ts";
import type { EpisodeStep, StoredEpisode, StoredOut } from "./episode-record.ts";
import { GatewayEpisode, type GatewayEpisodeInit } from "./episode.ts";
import { replyFingerprint } from "./conversation.ts";
import type { RelayOut } from "./relay.ts";
import { promptHash, type RecordedTurn } from "./upstream.ts";
import type { UpstreamChat, UpstreamTurn } from "./upstream-turn.ts";

/** Why a replay stopped: what it asked or answered differs from what the episode recorded. */
class Diverged extends Error {}

/**
 * The model endpoint during a replay: the recorded turns, in order, each only for the prompt it
 * was recorded for; then the live endpoint.
 */
class ReplayUpstream implements UpstreamChat {
  private next = 0;

  constructor(
    private readonly recorded: readonly RecordedTurn[],
    private readonly live: UpstreamChat,
  ) {}

  get replaying(): boolean {
    return this.next < this.recorded.length;
  }

  async complete(req: Parameters<UpstreamChat["complete"]>[0]): Promise<UpstreamTurn> {
    const turn = this.recorded[this.next];
    if (!turn) return this.live.complete(req);
    if (promptHash(req) !== turn.prompt)
      throw new Diverged(`model turn ${this.next + 1} was asked a different prompt than recorded`);
    this.next++;
    return turn.turn;
  }
}

const sameOut = (live: RelayOut, stored: StoredOut): boolean => {
  if (live.kind !== stored.kind) return false;
  if (live.kind === "reply" && stored.kind === "reply")
    return replyFingerprint(live.turn.reply) === replyFingerprint(stored.turn.reply);
  if (live.kind === "ended" && stored.kind === "ended") return live.reason === stored.reason;
  return true;
};

/** The conversation as the agent had sent it by the end of each step. */
export function conversationAt(steps: readonly EpisodeStep[], n: number): EpisodeStep["messages"] {
  return steps.slice(0, n + 1).flatMap((s) => s.messages);
}

/**
 * An episode rebuilt in this process from what the store recorded: `runEpisode` is deterministic
 * given the task, the harness, the seed and what the model and the agent said, so it runs again
 * with the recorded model turns standing in for the endpoint and each step's messages handed in
 * as the agent sent them; it must ask the same prompts and give the same answers, else the
 * episode cannot be continued here (its harness or this gateway changed) and is refused with 410.
 * The endpoint is asked nothing and nothing is metered; the live endpoint takes over after.
 *
 * @example
 * const episode = await restoreEpisode(stored, init);
 */
export async function restoreEpisode(stored: StoredEpisode, init: GatewayEpisodeInit): Promise<GatewayEpisode> {
  const recorded = stored.steps.flatMap((s) => s.turns);
  const upstream = new ReplayUpstream(recorded, init.upstream);
  const episode = new GatewayEpisode({ ...init, upstream });
  const fail = (why: string) => {
    episode.close();
    return new EpisodeClosedError(
      stored.meta.id,
      `it could not be continued here: ${why} (its harness or this gateway changed since); start the conversation again`,
    );
  };
  for (const step of stored.steps) {
    const out = await episode.advance(conversationAt(stored.steps, step.n), {});
    if (out.kind === "upstream-error") {
      const diverged = [out.error, (out.error as { cause?: unknown })?.cause].find((e) => e instanceof Diverged);
      throw fail(diverged ? diverged.message : `replaying step ${step.n} failed (${String(out.error)})`);
    }
    if (!sameOut(out, step.out)) throw fail(`step ${step.n} was answered differently than recorded`);
  }
  if (upstream.replaying) throw fail("the recorded model turns were not all asked for again");
  episode.takeSpent();
  return episode;
}
