import { z } from "zod";
import type { HarnessPool } from "../harness/pool.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Task } from "../task.ts";
import type { RoutingDecision } from "../voting/router.ts";

export const AuditRecord = z.object({
  decisionId: z.string(),
  chosen: z.array(z.string()),
  /** Success rate of every sibling on the task in hindsight. */
  rates: z.record(z.string(), z.number()),
  /** Some sibling could rescue the task at all. */
  rescuable: z.boolean(),
  /** At least one chosen sibling had the best hindsight rate. */
  hit: z.boolean(),
  /** Chance that k siblings drawn at random would include a best one. */
  randomHitChance: z.number(),
  rollouts: z.number().int(),
});
export type AuditRecord = z.infer<typeof AuditRecord>;

function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

/** Runs every sibling `trials` times on the task (all at once) to judge a routing decision in hindsight. */
export async function auditDecision(
  task: Task,
  decision: RoutingDecision,
  pool: HarnessPool,
  trials: number,
  seed: number,
  runRollout: RolloutRunner,
): Promise<AuditRecord> {
  const runs = await Promise.all(
    pool.siblings.map((s) =>
      Promise.all(Array.from({ length: trials }, (_, i) => runRollout(task, s, seed + 7919 * i + 1))),
    ),
  );
  const rates: Record<string, number> = {};
  pool.siblings.forEach((s, j) => {
    rates[s.id] = runs[j]!.filter((r) => r.success).length / trials;
  });
  const best = Math.max(...Object.values(rates));
  const bestIds = Object.keys(rates).filter((id) => rates[id] === best);
  const n = pool.siblings.length;
  const k = decision.chosen.length;
  return {
    decisionId: decision.id,
    chosen: decision.chosen,
    rates,
    rescuable: best > 0,
    hit: best > 0 && decision.chosen.some((id) => bestIds.includes(id)),
    randomHitChance: best > 0 ? 1 - choose(n - bestIds.length, k) / choose(n, k) : 0,
    rollouts: trials * n,
  };
}
