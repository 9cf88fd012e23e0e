import type { HarnessPool } from "../harness/pool.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import { hash32, shuffled, type Rng } from "../util/rng.ts";
import { addEvidence, blendProfiles, emptyProfile, rescueUtility, type ProfileSet } from "./profile.ts";

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
  /** Dev tasks that failed under H0 at the last measurement: probed first, where rescue evidence is. */
  priority?: readonly string[];
}

export interface ReanchorResult {
  profiles: ProfileSet;
  spent: number;
  /** Fresh rescue utility per sibling from this probe alone (NaN when it saw no rescue). */
  utilities: Record<string, number>;
  probedTasks: number;
  /** Probe tasks that failed under H0 this time (the next probe's priority). */
  failing: string[];
}

/**
 * Re-measures the profiles under the current policy: each probe task (last time's H0 failures
 * first, then the rest in random order) runs once under H0; when
 * it fails, once under every sibling (rescue evidence). Where the probe produced evidence, the old
 * evidence is scaled by `keep` and the fresh added (see {@link blendProfiles}); elsewhere the old
 * evidence stays. Stops before a task whose full probe would exceed the budget. The probes that
 * are certain to run go out together (what a batching policy endpoint needs); spend, evidence and
 * order are those of probing one task at a time.
 *
 * @example
 * const { profiles, spent } = await reanchor({ probeTasks: dev, pool, profiles, budget: 48, keep: 0.3, policyVersion: 7, step: 10, rng, runRollout });
 */
export async function reanchor(input: ReanchorInput): Promise<ReanchorResult> {
  const fresh: ProfileSet = {};
  for (const h of [input.pool.base, ...input.pool.siblings])
    fresh[h.id] = emptyProfile(h.id, input.policyVersion, input.step);
  let spent = 0;
  let probedTasks = 0;
  const failing: string[] = [];
  const first = new Set(input.priority ?? []);
  const order = shuffled(input.probeTasks, input.rng);
  const ordered = [...order.filter((t) => first.has(t.id)), ...order.filter((t) => !first.has(t.id))];
  const siblings = input.pool.siblings;
  let next = 0;
  let stopped = false;
  while (!stopped && next < ordered.length && spent + 1 <= input.budget) {
    // The tasks whose H0 probe is certain however the ones before them end (each failure before
    // them spends 1 + siblings): their probes run at once, then are read in order as one at a time.
    const sure = Math.floor((input.budget - spent - 1) / (1 + siblings.length)) + 1;
    const chunk = ordered.slice(next, next + sure);
    next += chunk.length;
    const seeds = chunk.map((task) => hash32(`reanchor:${input.step}:${task.id}`, input.rng.seed));
    const bases = await Promise.all(chunk.map((task, j) => input.runRollout(task, input.pool.base, seeds[j]!)));
    const rescued: { task: (typeof chunk)[number]; tags: readonly string[]; runs: Promise<Rollout[]> }[] = [];
    for (const [j, task] of chunk.entries()) {
      const base = bases[j]!;
      spent++;
      probedTasks++;
      fresh[input.pool.base.id] = addEvidence(fresh[input.pool.base.id]!, base, { rescueOf: [], taskTags: task.tags });
      if (base.success) continue;
      failing.push(task.id);
      if (spent + siblings.length > input.budget) {
        stopped = true;
        break;
      }
      spent += siblings.length;
      rescued.push({
        task,
        tags: base.failureTags,
        runs: Promise.all(siblings.map((s, i) => input.runRollout(task, s, seeds[j]! + i + 1))),
      });
    }
    for (const { task, tags, runs } of rescued) {
      (await runs).forEach((r, i) => {
        const id = siblings[i]!.id;
        fresh[id] = addEvidence(fresh[id]!, r, { rescueOf: tags, taskTags: task.tags });
      });
    }
  }
  const profiles: ProfileSet = {};
  const utilities: Record<string, number> = {};
  for (const [id, p] of Object.entries(fresh)) {
    const old = input.profiles[id];
    profiles[id] = old ? blendProfiles(old, p, input.keep) : p;
    const hasRescue = Object.keys(p.byFailureTag).length > 0;
    utilities[id] = hasRescue ? rescueUtility(p) : Number.NaN;
  }
  return { profiles, spent, utilities, probedTasks, failing };
}
