import type { Clock, DecisionCache, RoutingDecision } from "@harness-s/core";

/**
 * A decision cache in the process's memory: at most `maxEntries` (least recently used out first),
 * each kept for `ttlMs`. Per process: a Lambda container's warm cache, or a long-running server's.
 *
 * @example
 * const cache = new MemoryDecisionCache(systemClock, { maxEntries: 10_000, ttlMs: 60_000 });
 */
export class MemoryDecisionCache implements DecisionCache {
  private readonly entries = new Map<string, { decision: RoutingDecision; until: number }>();
  hits = 0;
  misses = 0;

  constructor(
    private readonly clock: Clock,
    private readonly opts: { maxEntries: number; ttlMs: number } = { maxEntries: 10_000, ttlMs: 60_000 },
  ) {}

  get(key: string): RoutingDecision | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.until <= this.clock.now()) {
      if (entry) this.entries.delete(key);
      this.misses++;
      return undefined;
    }
    this.entries.delete(key); // re-inserted: the most recently used last
    this.entries.set(key, entry);
    this.hits++;
    return entry.decision;
  }

  set(key: string, decision: RoutingDecision): void {
    this.entries.delete(key);
    this.entries.set(key, { decision, until: this.clock.now() + this.opts.ttlMs });
    while (this.entries.size > this.opts.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
