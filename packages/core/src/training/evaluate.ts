import type { HarnessSpec } from "../harness/spec.ts";
import { scoreTasks, type PassAvg } from "../metrics/pass-at-k.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import { inWindows } from "../util/in-windows.ts";
import { hash32 } from "../util/rng.ts";

/** Tasks whose attempts run at once during an evaluation. */
const TASKS_AT_ONCE = 8;

export interface Evaluation extends PassAvg {
  /** The same scores per task family. */
  byFamily: Record<string, PassAvg>;
  /** The same scores per family and latent requirement combination, e.g. `db:mutation+schema`. */
  byCombination: Record<string, PassAvg>;
  /** Share of rollouts showing each named behaviour, among rollouts where it was measurable. */
  behaviours: Record<string, number>;
  rollouts: number;
}

/**
 * Runs `n` attempts per task under the harness `harnessFor(task)` and scores Pass@3 / Avg@3.
 * Seeds depend only on `seedBase` and the task, so arms evaluated with the same base are paired.
 *
 * @example
 * const ev = await evaluateTasks(heldout, () => pool.base, 3, 11, runner);
 */
export async function evaluateTasks(
  tasks: readonly Task[],
  harnessFor: (task: Task) => HarnessSpec | Promise<HarnessSpec>,
  n: number,
  seedBase: number,
  runRollout: RolloutRunner,
): Promise<Evaluation> {
  const perTask: boolean[][] = [];
  const perFamily = new Map<string, boolean[][]>();
  const perCombination = new Map<string, boolean[][]>();
  const all: Rollout[] = [];
  // Harnesses are chosen in task order (a router's draws stay where they were); the attempts of
  // several tasks then run at once (a batching policy endpoint fills its batch).
  const harnesses: HarnessSpec[] = [];
  for (const task of tasks) harnesses.push(await harnessFor(task));
  const groups = await inWindows(tasks, TASKS_AT_ONCE, (task, t) =>
    Promise.all(
      Array.from({ length: n }, (_, i) => runRollout(task, harnesses[t]!, hash32(`eval:${task.id}:${i}`, seedBase))),
    ),
  );
  for (const [t, task] of tasks.entries()) {
    const group = groups[t]!;
    const flags = group.map((r) => r.success);
    perTask.push(flags);
    for (const [groups, key] of [
      [perFamily, task.family],
      [perCombination, combinationOf(task)],
    ] as const) {
      const list = groups.get(key);
      if (list) list.push(flags);
      else groups.set(key, [flags]);
    }
    all.push(...group);
  }
  const scored = (groups: Map<string, boolean[][]>) =>
    Object.fromEntries([...groups.entries()].map(([k, xs]) => [k, scoreTasks(xs, 3)]));
  return {
    ...scoreTasks(perTask, 3),
    byFamily: scored(perFamily),
    byCombination: scored(perCombination),
    behaviours: behaviourRates(all),
    rollouts: all.length,
  };
}

/** `family:req1+req2`, or `family:plain` for a task without latent requirements. */
export function combinationOf(task: Task): string {
  return `${task.family}:${task.requirements.join("+") || "plain"}`;
}

/** For each behaviour name, the share of rollouts reporting it true among those reporting it. */
export function behaviourRates(rollouts: readonly Rollout[]): Record<string, number> {
  const seen = new Map<string, [number, number]>();
  for (const r of rollouts) {
    for (const [name, shown] of Object.entries(r.behaviours)) {
      const [yes, total] = seen.get(name) ?? [0, 0];
      seen.set(name, [yes + (shown ? 1 : 0), total + 1]);
    }
  }
  return Object.fromEntries([...seen.entries()].map(([k, [yes, total]]) => [k, yes / total]));
}
