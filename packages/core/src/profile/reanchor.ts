import type { HarnessPool } from "../harness/pool.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Task } from "../task.ts";
import { hash32, shuffled, type Rng } from "../util/rng.ts";
import { addEvidence, decayProfile, emptyProfile, mergeProfiles, rescueUtility, type ProfileSet } from "./profile.ts";

export interface ReanchorInput {
  probeTasks: readonly Task[];
  pool: HarnessPool;
  profiles: ProfileSet;
  /** Most rollouts this re-anchoring may spend; it never exceeds it. */
  budget: number;
  /** Weight kept on the old evidence (0 = replace by the fresh probe, 1 = only add). */
  keep: number;
  policyVersion: number;
  step: number;
  rng: Rng;
  runRollout: RolloutRunner;
}

export interface ReanchorResult {
  profiles: ProfileSet;
  spent: number;
  /** Fresh rescue utility per sibling from this probe alone (NaN when it saw no rescue). */
  utilities: Record<string, number>;
  probedTasks: number;
}

/**
 * Re-measures the profiles under the current policy: each probe task runs once under H0; when
 * it fails, once under every sibling (rescue evidence). Old evidence is decayed by `keep` and
 * merged with the fresh one. Stops before a task whose full probe would exceed the budget.
 *
 * @example
 * const { profiles, spent } = await reanchor({ probeTasks: dev, pool, profiles, budget: 48, keep: 0.3, policyVersion: 7, step: 10, rng, runRollout });
 */
export async function reanchor(input: ReanchorInput): Promise<ReanchorResult> {
  const fresh: ProfileSet = {};
  for (const h of [input.pool.base, ...input.pool.siblings]) fresh[h.id] = emptyProfile(h.id, input.policyVersion, input.step);
  let spent = 0;
  let probedTasks = 0;
  for (const task of shuffled(input.probeTasks, input.rng)) {
    if (spent + 1 > input.budget) break;
    const seed = hash32(`reanchor:${input.step}:${task.id}`, input.rng.seed);
    const base = await input.runRollout(task, input.pool.base, seed);
    spent++;
    probedTasks++;
    fresh[input.pool.base.id] = addEvidence(fresh[input.pool.base.id]!, base, { rescueOf: [], taskTags: task.tags });
    if (base.success) continue;
    if (spent + input.pool.siblings.length > input.budget) break;
    const rescues = await Promise.all(input.pool.siblings.map((s, i) => input.runRollout(task, s, seed + i + 1)));
    spent += rescues.length;
    rescues.forEach((r, i) => {
      const id = input.pool.siblings[i]!.id;
      fresh[id] = addEvidence(fresh[id]!, r, { rescueOf: base.failureTags, taskTags: task.tags });
    });
  }
  const profiles: ProfileSet = {};
  const utilities: Record<string, number> = {};
  for (const [id, p] of Object.entries(fresh)) {
    const old = input.profiles[id];
    profiles[id] = old ? { ...mergeProfiles(decayProfile(old, input.keep), p), policyVersion: input.policyVersion, updatedAtStep: input.step } : p;
    const hasRescue = Object.keys(p.byFailureTag).length > 0;
    utilities[id] = hasRescue ? rescueUtility(p) : Number.NaN;
  }
  return { profiles, spent, utilities, probedTasks };
}
