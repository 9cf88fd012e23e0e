import type { HarnessPool } from "../harness/pool.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import type { ProfileSet } from "../profile/profile.ts";
import { viewOf, type Task } from "../task.ts";
import type { Rng } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import { route, routerOptions, type RouterOptionsInput } from "../voting/router.ts";

/**
 * Rank-1 inference: the router picks one harness (H0 or a sibling) per task from the task's
 * visible features and the profiles alone.
 *
 * @example
 * const pick = rank1Picker(pool, profiles, { voters: statisticalVoters, rng });
 * const harness = await pick(task);
 */
export function rank1Picker(
  pool: HarnessPool,
  profiles: ProfileSet,
  deps: { voters: readonly Voter[]; rng: Rng },
  options: RouterOptionsInput = {},
): (task: Task) => Promise<HarnessSpec> {
  const candidates = [pool.base, ...pool.siblings];
  const rank1 = routerOptions({ ...options, k: 1, exploration: 0 });
  return async (task) => {
    const decision = await route(
      { decisionId: `rank1:${task.id}`, task: viewOf(task), candidates, profiles, poolVersion: pool.version },
      rank1,
      deps,
    );
    return candidates.find((c) => c.id === decision.chosen[0])!;
  };
}
