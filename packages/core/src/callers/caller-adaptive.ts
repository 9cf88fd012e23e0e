import { z } from "zod";
import { NotFoundError } from "../errors.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import { profileOf } from "../profile/profile.ts";
import type { ProfileStore } from "../profile/store.ts";
import { createRng, hash32 } from "../util/rng.ts";
import {
  H0_OPTION,
  cappedPosterior,
  chooseAdaptive,
  siblingEvidence,
  type AdaptiveChoice,
} from "../training/adaptive.ts";

/** The most resample rollouts a caller may report as its H0 option's evidence. */
const MAX_REPORTED = 1_000_000;

/** What a caller's own H0 resamples of all-fail groups found so far in its run: the adaptive H0 option's evidence. */
export const ResampleEvidence = z
  .strictObject({
    attempts: z.number().int().min(0).max(MAX_REPORTED),
    successes: z.number().int().min(0).max(MAX_REPORTED),
  })
  .refine((c) => c.successes <= c.attempts, { path: ["successes"], message: "at most attempts" });
export type ResampleEvidence = z.infer<typeof ResampleEvidence>;

/** An adaptive caller rescue's choice, and the harness each of its rollout slots runs (none: nothing to run). */
export interface CallerAdvice {
  adaptive: AdaptiveChoice;
  /** Harness ids, one per rollout slot, in slot order. */
  slots: string[];
}

/**
 * The adaptive choice for a caller's all-fail group, after the router picked `chosen`: its Top-k
 * siblings (posteriors from the pool's profiles, which learn from every reported rescue), H0 again
 * (posterior from the caller's reported resamples), or nothing; either option spends the
 * request's `rollouts`, the same as a routed rescue would. Seeded by the decision id, so the
 * same decision gets the same choice.
 *
 * @example
 * const { adaptive, slots } = await adviseCallerRescue({ poolId, family, failureTags, rollouts: 4 }, decision, deps);
 */
export async function adviseCallerRescue(
  req: {
    poolId: string;
    family: string;
    failureTags: readonly string[];
    rollouts: number;
    resampleEvidence?: ResampleEvidence | undefined;
  },
  decision: { id: string; chosen: readonly string[] },
  deps: { pools: Pick<PoolStore, "get">; profiles: Pick<ProfileStore, "get"> },
): Promise<CallerAdvice> {
  const [pool, profiles] = await Promise.all([deps.pools.get(req.poolId), deps.profiles.get(req.poolId)]);
  if (!pool) throw new NotFoundError("pool", req.poolId);
  const siblings = decision.chosen.map((id) =>
    cappedPosterior(id, siblingEvidence(profileOf(profiles, id), req.family, req.failureTags)),
  );
  const input = {
    siblings,
    resample: cappedPosterior(H0_OPTION, req.resampleEvidence ?? { attempts: 0, successes: 0 }),
    cost: { siblings: req.rollouts, resample: req.rollouts },
    budgetLeft: req.rollouts,
  };
  const adaptive = chooseAdaptive(input, createRng(hash32(`adaptive:${decision.id}`)));
  const harnessOf = (id: string) => (id === H0_OPTION ? pool.base.id : id);
  const order = [...decision.chosen, H0_OPTION].filter((id) => adaptive.allocation[id] !== undefined);
  return {
    adaptive,
    slots: order.flatMap((id) => Array.from({ length: adaptive.allocation[id]! }, () => harnessOf(id))),
  };
}
