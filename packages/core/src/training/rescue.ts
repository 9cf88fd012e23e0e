import type { HarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import { hasSignal } from "../grpo/advantage.ts";

/** True when every rollout of the group failed: the trigger for rescue. */
export function isAllFail(group: readonly Rollout[]): boolean {
  return group.length > 0 && group.every((r) => !r.success);
}

/**
 * Splits `total` rollouts as evenly as possible over `k` harnesses, earlier ones first.
 *
 * @example
 * splitRollouts(5, 2); // [3, 2]
 */
export function splitRollouts(total: number, k: number): number[] {
  if (k <= 0) return [];
  return Array.from({ length: k }, (_, i) => Math.floor(total / k) + (i < total % k ? 1 : 0));
}

function byFrequency(lists: readonly (readonly string[])[], skip: (s: string) => boolean = () => false): string[] {
  const counts = new Map<string, number>();
  for (const list of lists)
    for (const item of new Set(list)) if (!skip(item)) counts.set(item, (counts.get(item) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k]) => k);
}

/** Failure tags and salient events of a failed group, most frequent first. */
export function failureSummary(group: readonly Rollout[]): { tags: string[]; events: string[] } {
  return {
    tags: byFrequency(group.map((r) => r.failureTags)),
    events: byFrequency(
      group.map((r) => r.events),
      (e) => e === "start",
    ),
  };
}

export type RescueOutcome = { kind: "replaced"; group: Rollout[] } | { kind: "dropped"; group: Rollout[] };

/**
 * Rolls the same policy out again under the chosen siblings (rollouts split evenly) and
 * replaces the failed group when the new group has reward variance; otherwise drops it.
 *
 * @example
 * const out = await rescueGroup(task, [sibA, sibB], 4, (i) => seedFor(i), runner);
 * if (out.kind === "replaced") train(out.group);
 */
export async function rescueGroup(
  task: Task,
  chosen: readonly HarnessSpec[],
  totalRollouts: number,
  seedFor: (index: number) => number,
  runRollout: RolloutRunner,
): Promise<RescueOutcome> {
  const plan = splitRollouts(totalRollouts, chosen.length);
  const jobs: Promise<Rollout>[] = [];
  let index = 0;
  chosen.forEach((harness, h) => {
    for (let i = 0; i < plan[h]!; i++) jobs.push(runRollout(task, harness, seedFor(index++)));
  });
  const group = await Promise.all(jobs);
  return hasSignal(group.map((r) => r.reward)) ? { kind: "replaced", group } : { kind: "dropped", group };
}
