import { z } from "zod";
import { spendUsage } from "../billing/metering.ts";
import type { UsageSink } from "../billing/usage.ts";
import { NotFoundError } from "../errors.ts";
import { Id, Name } from "../names.ts";
import { createRng, hash32 } from "../util/rng.ts";
import type { Clock } from "../util/clock.ts";
import type { Voter } from "../voting/ballot.ts";
import type { PanelSettings } from "../voting/panel.ts";
import {
  route,
  routerOptions,
  withTopK,
  type RouterDeps,
  type RouterOptions,
  type RoutingDecision,
} from "../voting/router.ts";
import { decisionCacheKey, type DecisionCache } from "./decision-cache.ts";
import type { DecisionStore } from "./decision-store.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import type { ProfileStore } from "../profile/store.ts";
import { DEFAULT_TOP_K, TopK } from "../voting/top-k.ts";

export const RouteRequest = z.object({
  poolId: Id,
  task: z.object({
    id: Id,
    family: Name,
    tags: z.array(Name).max(50).default([]),
    instruction: z.string().max(20_000).optional(),
  }),
  /** Failure tags of the failed group, when routing a rescue; omit for Rank-1. */
  failureTags: z.array(Name).max(50).default([]),
  failedEvents: z.array(z.string().max(100)).max(100).default([]),
  k: TopK.default(DEFAULT_TOP_K),
  /** Include H0 among the candidates (Rank-1 inference). Defaults to true when no failure tags are given. */
  includeBase: z.boolean().optional(),
});
export type RouteRequest = z.infer<typeof RouteRequest>;

export interface RouteTaskDeps {
  pools: PoolStore;
  profiles: ProfileStore;
  decisions: DecisionStore;
  voters: readonly Voter[];
  /**
   * A voter panel's settings (see `votersFromPanel`): weights, quorum, the voters that decide
   * below it, and how long each voter may take. Without it: equal weights, a majority quorum.
   */
  panel?: PanelSettings;
  clock: Clock;
  /** Decisions served again to identical requests (see `decisionCacheKey`); none: every request votes. */
  decisionCache?: DecisionCache;
  /** New unique decision ids (random at the composition root, a counter in tests). */
  newId: () => string;
}

const parsedOptions = new WeakMap<RouteTaskDeps, RouterOptions>();

/** The panel's router options, validated once per deps (the composition root's one object). */
function baseOptions(deps: RouteTaskDeps): RouterOptions {
  let options = parsedOptions.get(deps);
  if (!options) {
    options = routerOptions({
      ...deps.panel?.options,
      ...(deps.panel?.timeoutMs ? { voterTimeoutMs: deps.panel.timeoutMs } : {}),
    });
    parsedOptions.set(deps, options);
  }
  return options;
}

/**
 * The router use-case behind `POST /v1/route`: loads the pool and its profiles, votes, records
 * the decision (with the asking key's id, its owner) and returns it. `used` hears of every voter
 * call's tokens and cost as they are spent (whether the decision is then made or not), and of the
 * decision's ballots once it is made ({@link ballotUsage}).
 *
 * @example
 * const d = await routeTask(RouteRequest.parse({ poolId: "embedded", task: { id: "t1", family: "app" }, failureTags: ["unauthorized"] }), deps);
 */
export async function routeTask(
  req: RouteRequest,
  deps: RouteTaskDeps,
  keyId?: string,
  used?: UsageSink,
): Promise<RoutingDecision> {
  const onSpend: RouterDeps["onSpend"] | undefined = used && ((spent) => used(spendUsage(spent)));
  const pool = await deps.pools.get(req.poolId);
  if (!pool) throw new NotFoundError("pool", req.poolId);
  const includeBase = req.includeBase ?? req.failureTags.length === 0;
  const candidates = includeBase ? [pool.base, ...pool.siblings] : pool.siblings;
  const profiles = await deps.profiles.get(pool.id);
  const decisionId = deps.newId();
  const cacheKey = deps.decisionCache ? decisionCacheKey(req, pool.version, profiles) : undefined;
  const scope = keyId ?? "";
  const cached = cacheKey ? deps.decisionCache!.get(scope, cacheKey) : undefined;
  // A cache hit is a new decision (its own id and owner) with the cached one's ranking and ballots.
  const routed = cached
    ? { ...cached, id: decisionId, cachedFrom: cached.id }
    : await route(
        {
          decisionId,
          task: req.task,
          failureTags: req.failureTags,
          failedEvents: req.failedEvents,
          candidates,
          profiles,
          poolVersion: pool.version,
        },
        withTopK(baseOptions(deps), Math.min(req.k, candidates.length)),
        {
          voters: deps.voters,
          rng: createRng(hash32(decisionId)),
          clock: deps.clock,
          ...(deps.panel?.fallback ? { fallback: deps.panel.fallback } : {}),
          ...(onSpend ? { onSpend } : {}),
        },
      );
  if (cacheKey && !cached) deps.decisionCache!.set(scope, cacheKey, routed);
  const { keyId: _owner, ...shared } = routed;
  const decision: RoutingDecision = keyId === undefined ? shared : { ...shared, keyId };
  await deps.decisions.put(decision);
  used?.(ballotUsage(decision));
  return decision;
}

/**
 * How many ballots a decision is metered for (a decision served from the cache cast none). Its
 * voters' tokens and cost are metered as they are spent (`routeTask`'s `onSpend`), not from here.
 *
 * @example
 * addUsage(c, ballotUsage(decision)); // { ballots: 3 }
 */
export function ballotUsage(decision: RoutingDecision): { ballots: number } {
  return { ballots: decision.cachedFrom !== undefined ? 0 : decision.ballots.length };
}
