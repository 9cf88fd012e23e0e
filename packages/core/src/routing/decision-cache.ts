import { contentVersion } from "../harness/pool.ts";
import type { ProfileSet } from "../profile/profile.ts";
import type { RoutingDecision } from "../voting/router.ts";

/**
 * Decisions already made, by what decided them, each asking key's apart (`scope`): a cached
 * decision is served to an identical request of the same key without asking any voter (an LLM
 * panel's tokens are spent once per key), and no key can learn from a hit that another asked,
 * nor push another's entries out.
 */
export interface DecisionCache {
  get(scope: string, key: string): RoutingDecision | undefined;
  set(scope: string, key: string, decision: RoutingDecision): void;
}

/** What of a `RouteRequest` decides its decision. */
export interface CacheableRequest {
  poolId: string;
  task: unknown;
  failureTags: readonly string[];
  failedEvents: readonly string[];
  k: number;
  includeBase?: boolean;
}

/**
 * The cache key of a routing request: the pool's content version, a content version of the
 * pool's profiles as they are now, and the request itself (task view, failure tags and events, k,
 * whether H0 is a candidate). Nothing is invalidated by hand: new evidence changes the profiles'
 * version, a new pool changes the pool's, so a stale entry is never looked up again (and ages out
 * of the cache). The asking key is the cache's scope, not part of this key.
 *
 * @example
 * const key = decisionCacheKey(req, pool.version, profiles);
 */
export function decisionCacheKey(req: CacheableRequest, poolVersion: string, profiles: ProfileSet): string {
  return `${req.poolId}@${poolVersion}/${contentVersion(profiles)}/${contentVersion({ task: req.task, failureTags: req.failureTags, failedEvents: req.failedEvents, k: req.k, includeBase: req.includeBase ?? null })}`;
}
