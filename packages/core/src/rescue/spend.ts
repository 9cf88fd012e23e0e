import type { CallerRescue, RolloutSpend } from "./caller-rescue.ts";
import type { RescueJob, RescueJobStore, SlotFailure } from "./job-record.ts";
import type { UsageMeter } from "../billing/usage.ts";

/**
 * Why a caller rescue may start no more slots (its budget is spent: `BUDGET_EXCEEDED`), or
 * undefined. Slots running when it is reached finish: a rescue overshoots by at most what they spend.
 *
 * @example
 * budgetExhausted({ policyTokens: 1000 }, job); // { code: "BUDGET_EXCEEDED", reason: "… 1024 policy tokens of a budget of 1000" }
 */
export function budgetExhausted(budget: CallerRescue["budget"], job: RescueJob | undefined): SlotFailure | undefined {
  if (!budget || !job) return undefined;
  const tokens = job.spentPolicyTokens ?? 0;
  if (budget.policyTokens !== undefined && tokens >= budget.policyTokens)
    return { code: "BUDGET_EXCEEDED", reason: `the rescue's rollouts sampled ${tokens} policy tokens of a budget of ${budget.policyTokens}` };
  const seconds = (job.spentEnvironmentMs ?? 0) / 1000;
  if (budget.environmentSeconds !== undefined && seconds >= budget.environmentSeconds)
    return { code: "BUDGET_EXCEEDED", reason: `the rescue's rollouts spent ${seconds.toFixed(1)} s in the environment of a budget of ${budget.environmentSeconds} s` };
  return undefined;
}

/** Meters what one rollout of a caller rescue spent to its key and holds it against its rescue, failed or not. */
export async function recordSpend(keyId: string, jobId: string, spend: RolloutSpend, deps: { meter?: UsageMeter; jobs?: RescueJobStore }): Promise<void> {
  if (spend.policyTokens === 0 && spend.policyMs === 0 && spend.environmentMs === 0) return;
  const usage = { policyTokens: spend.policyTokens, policyMs: spend.policyMs, environmentMs: spend.environmentMs };
  await Promise.all([deps.meter?.add(keyId, usage), deps.jobs?.addSpend(jobId, spend)]);
}
