import { ScopedLru } from "@harness-s/core";
import type { EpisodeMeta, EpisodeStep, GatewayEpisodeStore, StoredEpisode } from "@harness-s/core/gateway";

/** The in-memory store's bounds: episodes per key and in all (one key's cap never evicts another's episodes). */
export interface MemoryEpisodeLimits {
  maxEpisodes: number;
  maxEpisodesPerKey: number;
}
export const MEMORY_EPISODE_LIMITS: MemoryEpisodeLimits = { maxEpisodes: 10_000, maxEpisodesPerKey: 1_000 };

const copy = <T>(value: T): T => structuredClone(value);

/**
 * Gateway episodes in this process (`serve` without DynamoDB, unit tests): the same conditional
 * writes as the DynamoDB store, each key's apart; past a key's cap its own oldest episode goes,
 * past the total the oldest of the key holding the most.
 */
export class MemoryGatewayEpisodeStore implements GatewayEpisodeStore {
  private readonly episodes: ScopedLru<StoredEpisode>;

  constructor(limits: MemoryEpisodeLimits = MEMORY_EPISODE_LIMITS) {
    this.episodes = new ScopedLru({ maxPerScope: limits.maxEpisodesPerKey, maxTotal: limits.maxEpisodes });
  }

  async create(meta: EpisodeMeta, first: EpisodeStep): Promise<boolean> {
    if (this.episodes.peek(meta.keyId, meta.id)) return false;
    this.episodes.set(meta.keyId, meta.id, { meta: copy(meta), steps: [copy(first)] });
    return true;
  }

  async load(keyId: string, id: string): Promise<StoredEpisode | undefined> {
    const e = this.episodes.get(keyId, id);
    return e && copy(e);
  }

  async withOpening(keyId: string, opening: string, limit: number): Promise<StoredEpisode[]> {
    return this.episodes
      .values(keyId)
      .filter((e) => e.meta.opening === opening)
      .reverse()
      .slice(0, limit)
      .map(copy);
  }

  async lease(
    keyId: string,
    id: string,
    holder: string,
    now: number,
    until: number,
  ): Promise<{ steps: number } | undefined> {
    const e = this.episodes.peek(keyId, id);
    if (!e || (e.meta.leaseUntil > now && e.meta.leaseHolder !== holder)) return undefined;
    e.meta.leaseUntil = until;
    e.meta.leaseHolder = holder;
    return { steps: e.meta.steps };
  }

  async append(
    keyId: string,
    id: string,
    step: EpisodeStep,
    change: Pick<EpisodeMeta, "status" | "lastUsed" | "expiresAt">,
  ): Promise<boolean> {
    const e = this.episodes.peek(keyId, id);
    if (!e || e.meta.steps !== step.n) return false;
    e.steps.push(copy(step));
    Object.assign(e.meta, { status: change.status, lastUsed: change.lastUsed, steps: step.n + 1, leaseUntil: 0 });
    delete e.meta.leaseHolder;
    return true;
  }

  async release(keyId: string, id: string, holder: string): Promise<void> {
    const e = this.episodes.peek(keyId, id);
    if (e?.meta.leaseHolder !== holder) return;
    e.meta.leaseUntil = 0;
    delete e.meta.leaseHolder;
  }

  async update(
    keyId: string,
    id: string,
    change: Partial<Pick<EpisodeMeta, "reward" | "status">>,
  ): Promise<EpisodeMeta | undefined> {
    const e = this.episodes.peek(keyId, id);
    if (!e) return undefined;
    Object.assign(e.meta, change);
    return copy(e.meta);
  }
}
