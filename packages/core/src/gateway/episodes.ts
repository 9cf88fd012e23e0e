import type { GatewayEpisode } from "./episode.ts";

/**
 * The gateway's episodes, live in this process (each is a running episode waiting on its agent,
 * so they cannot be stored elsewhere): one idle past `idleMs` is closed, and the oldest go
 * first past `maxEpisodes`. A closed episode's trajectory stays readable until it is evicted.
 *
 * @example
 * const episodes = new GatewayEpisodes({ idleMs: 30 * 60_000, maxEpisodes: 10_000 });
 */
export class GatewayEpisodes {
  private readonly byId = new Map<string, GatewayEpisode>();

  constructor(private readonly limits: { idleMs: number; maxEpisodes: number }) {}

  get(id: string): GatewayEpisode | undefined {
    return this.byId.get(id);
  }

  add(episode: GatewayEpisode): void {
    this.byId.get(episode.id)?.close();
    this.byId.delete(episode.id);
    this.byId.set(episode.id, episode);
    while (this.byId.size > this.limits.maxEpisodes) {
      const [oldest] = this.byId.values();
      oldest!.close();
      this.byId.delete(oldest!.id);
    }
  }

  /** Closes episodes idle past the limit; ones idle for ten times as long are forgotten. */
  sweep(now: number): void {
    for (const e of this.byId.values()) {
      if (now - e.lastUsed > this.limits.idleMs) e.close();
      if (now - e.lastUsed > 10 * this.limits.idleMs) this.byId.delete(e.id);
    }
  }

  /** Closes every running episode (the gateway stops). */
  closeAll(): void {
    for (const e of this.byId.values()) e.close();
  }
}
