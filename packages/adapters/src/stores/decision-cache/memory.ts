import { ScopedLru, type Clock } from "@harness-s/core";
import type { DecisionCache } from "@harness-s/core/routing";
import type { RoutingDecision } from "@harness-s/core/voting";

/** The decision cache's bounds: entries in all, per asking key, and how long each is served. */
export const DECISION_CACHE_LIMITS = { maxEntries: 10_000, maxPerKey: 1_000, ttlMs: 60_000 };

/**
 * A decision cache in the process's memory, each key's entries apart ({@link ScopedLru}: a key's
 * own least recently used go first, and one key never evicts another holding fewer), each kept
 * for `ttlMs`. Per process: a Lambda container's warm cache, or a long-running server's.
 *
 * @example
 * const cache = new MemoryDecisionCache(systemClock, DECISION_CACHE_LIMITS);
 */
export class MemoryDecisionCache implements DecisionCache {
  private readonly entries: ScopedLru<{ decision: RoutingDecision; until: number }>;
  hits = 0;
  misses = 0;

  constructor(
    private readonly clock: Clock,
    private readonly opts: { maxEntries: number; maxPerKey?: number; ttlMs: number } = DECISION_CACHE_LIMITS,
  ) {
    this.entries = new ScopedLru({
      maxPerScope: opts.maxPerKey ?? Math.min(opts.maxEntries, DECISION_CACHE_LIMITS.maxPerKey),
      maxTotal: opts.maxEntries,
    });
  }

  get(scope: string, key: string): RoutingDecision | undefined {
    const entry = this.entries.get(scope, key);
    if (!entry || entry.until <= this.clock.now()) {
      if (entry) this.entries.delete(scope, key);
      this.misses++;
      return undefined;
    }
    this.hits++;
    return entry.decision;
  }

  set(scope: string, key: string, decision: RoutingDecision): void {
    this.entries.set(scope, key, { decision, until: this.clock.now() + this.opts.ttlMs });
  }
}
