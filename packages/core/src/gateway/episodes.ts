import { ScopedLru } from "../util/scoped-lru.ts";
import type { GatewayEpisode } from "./episode.ts";

/** The gateway's bounds, declared once: idle time, open episodes per key and in all, and the largest conversation. */
export const GATEWAY_LIMITS = {
  idleMs: 30 * 60_000,
  maxEpisodes: 10_000,
  maxEpisodesPerKey: 1_000,
  /** Conversations grow with every turn: the gateway reads bodies up to this size. */
  maxBodyBytes: 4 << 20,
} as const;

export interface GatewayEpisodeLimits {
  idleMs: number;
  maxEpisodes: number;
  /** Default: the smaller of `maxEpisodes` and {@link GATEWAY_LIMITS}.maxEpisodesPerKey. */
  maxEpisodesPerKey?: number;
}

/**
 * The gateway's episodes, live in this process (each is a running episode waiting on its agent),
 * each key's apart: an episode's name (the `x-harness-s-episode` header or the id the gateway
 * gave it) means something only to the key that opened it, so no key can take, probe or end
 * another's. One idle past `idleMs` is closed; past a key's cap its own oldest goes, past the
 * total the oldest of the key holding the most (never a key holding fewer than another). A
 * closed episode's trajectory stays readable until it is evicted or forgotten.
 *
 * @example
 * const episodes = new GatewayEpisodes(GATEWAY_LIMITS);
 */
export class GatewayEpisodes {
  private readonly lru: ScopedLru<GatewayEpisode>;

  constructor(private readonly limits: GatewayEpisodeLimits) {
    const perKey = limits.maxEpisodesPerKey ?? Math.min(limits.maxEpisodes, GATEWAY_LIMITS.maxEpisodesPerKey);
    this.lru = new ScopedLru({ maxPerScope: perKey, maxTotal: limits.maxEpisodes }, (_key, _id, episode) => episode.close());
  }

  /** The key's episode of this id (now its most recently used). */
  get(keyId: string, id: string): GatewayEpisode | undefined {
    return this.lru.get(keyId, id);
  }

  /** The key's episodes that began with this opening (its messages up to the first user message). */
  withOpening(keyId: string, opening: string): GatewayEpisode[] {
    return this.lru.values(keyId).filter((e) => e.opening === opening);
  }

  /** Adds an episode (one of the same key and id is closed and replaced). */
  add(episode: GatewayEpisode): void {
    this.lru.peek(episode.keyId, episode.id)?.close();
    this.lru.set(episode.keyId, episode.id, episode);
  }

  /** Closes episodes idle past the limit; ones idle for ten times as long are forgotten. */
  sweep(now: number): void {
    for (const [keyId, id, e] of [...this.lru.all()]) {
      if (now - e.lastUsed > this.limits.idleMs) e.close();
      if (now - e.lastUsed > 10 * this.limits.idleMs) this.lru.delete(keyId, id);
    }
  }

  /** Closes every running episode (the gateway stops). */
  closeAll(): void {
    for (const [, , e] of this.lru.all()) e.close();
  }
}
