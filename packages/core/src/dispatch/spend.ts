import type { CallerRescue, RolloutSpend } from "../callers/caller-rescue.ts";
import type { SlotFailure, SlotJob, SlotJobs } from "./slots.ts";
import type { UsageMeter } from "../billing/usage.ts";

/**
 * Why a caller rescue may start no more slots (its budget is spent: `BUDGET_EXCEEDED`), or
 * undefined. Slots running when it is reached finish: a rescue overshoots by at most what they spend.
 *
 * @example
 * budgetExhausted({ policyTokens: 1000 }, job); // { code: "BUDGET_EXCEEDED", reason: "… 1024 policy tokens of a budget of 1000" }
 */
export function budgetExhausted(budget: CallerRescue["budget"], job: SlotJob | undefined): SlotFailure | undefined {
  if (!budget || !job) return undefined;
  const tokens = job.spentPolicyTokens ?? 0;
  if (budget.policyTokens !== undefined && tokens >= budget.policyTokens)
    return {
      code: "BUDGET_EXCEEDED",
      reason: `the rescue's rollouts sampled ${tokens} policy tokens of a budget of ${budget.policyTokens}`,
    };
  const seconds = (job.spentEnvironmentMs ?? 0) / 1000;
  if (budget.environmentSeconds !== undefined && seconds >= budget.environmentSeconds)
    return {
      code: "BUDGET_EXCEEDED",
      reason: `the rescue's rollouts spent ${seconds.toFixed(1)} s in the environment of a budget of ${budget.environmentSeconds} s`,
    };
  return undefined;
}

/**
 * Meters what one attempt of a caller rescue's rollout spent to its key and holds it against its rescue, failed or not
 * (an attempt the queue delivers again: each attempt's spend is its own).
 */
export async function recordSpend(
  keyId: string,
  jobId: string,
  spend: RolloutSpend,
  deps: { meter?: UsageMeter; jobs?: SlotJobs },
): Promise<void> {
  await recordSpendThen(keyId, jobId, spend, deps, async () => undefined);
}

/**
 * {@link recordSpend}, and then `finish` (what shows the slot finished: its rollout stored, its
 * failure recorded) once the spend is held against its rescue: a status that shows the slot
 * finished shows what it spent. The key's meter is written beside.
 */
export async function recordSpendThen<T>(
  keyId: string,
  jobId: string,
  spend: RolloutSpend,
  deps: { meter?: UsageMeter; jobs?: SlotJobs },
  finish: () => Promise<T>,
  slot?: number,
): Promise<T> {
  if (spend.policyTokens === 0 && spend.policyMs === 0 && spend.environmentMs === 0) return finish();
  const usage = { policyTokens: spend.policyTokens, policyMs: spend.policyMs, environmentMs: spend.environmentMs };
  const held = async () => {
    await deps.jobs?.addSpend(jobId, spend, slot);
    return finish();
  };
  // A slot that finishes is metered once: a process that died after this write and before the slot's end leaves the
  // redelivered attempt's spend unmetered (the slot's first finished spend stands).
  const once = slot === undefined ? {} : { once: `${jobId}:${slot}` };
  const [finished] = await Promise.all([held(), deps.meter?.add(keyId, usage, once)]);
  return finished;
}
