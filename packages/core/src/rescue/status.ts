import { z } from "zod";
import { NotFoundError } from "../errors.ts";
import type { Clock } from "../util/clock.ts";
import { visibleTo } from "../access/keys.ts";
import type { RescueJob, RescueJobStore, RescueSlots } from "./job-record.ts";
import type { RolloutStore, RolloutSummary } from "../rollout/store.ts";

export const RescueStatus = z.object({
  job: z.object({ id: z.string(), poolId: z.string(), taskId: z.string(), chosen: z.array(z.string()), expected: z.number() }),
  /**
   * failed: every slot is stored or given up on, and at least one was given up on (failed at once
   * with its code, or its message in the DLQ); cancelled: its key cancelled it before every slot was stored (slots running then
   * may still be stored).
   */
  status: z.enum(["running", "done", "failed", "cancelled"]),
  completed: z.number().int(),
  /** Slots that will never be stored: the code of why (an error code of this service's), and what happened. */
  failed: z.array(z.object({ index: z.number(), code: z.string(), reason: z.string() })),
  rescued: z.boolean(),
  /** What a caller rescue's rollouts have spent so far, failed or not (held against its budget). */
  spent: z.object({ policyTokens: z.number().int(), policySeconds: z.number(), environmentSeconds: z.number() }),
  rollouts: z.array(z.object({ index: z.number(), harnessId: z.string(), reward: z.number(), success: z.boolean(), failureTags: z.array(z.string()), steps: z.number() })),
});
export type RescueStatus = z.infer<typeof RescueStatus>;

/**
 * Status of a rescue, derived from the stored rollouts' summaries (no counters to drift). With `key`, a
 * rescue another key started is "not found" (see {@link visibleTo}).
 */
export async function rescueStatus(
  id: string,
  deps: { jobs: RescueJobStore; rollouts: RolloutStore; rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
): Promise<RescueStatus> {
  // Read together: a rescue another key started is still "not found", its rollouts read and dropped.
  const [job, stored] = await Promise.all([deps.jobs.get(id), deps.rollouts.summaries(id)]);
  return statusOf(id, job, stored, deps, key);
}

/** A rescue's status from its record and its stored rollouts' summaries, as read. */
async function statusOf(
  id: string,
  job: RescueJob | undefined,
  stored: readonly RolloutSummary[],
  deps: { rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
): Promise<RescueStatus> {
  if (!job || (key && !visibleTo(job.keyId, key))) throw new NotFoundError("rescue", id);
  const rewards = stored.map((r) => r.reward);
  const storedAt = new Set(stored.map((r) => r.index));
  const failed = [...new Map((job.failures ?? []).filter((f) => !storedAt.has(f.index)).map((f) => [f.index, f])).values()].sort((a, b) => a.index - b.index);
  const status = stored.length >= job.expected ? "done" : job.cancelledAt !== undefined ? "cancelled" : stored.length + failed.length >= job.expected ? "failed" : "running";
  // Its end seen: its slots go back to its key (else its hold expires by itself).
  if (status !== "running" && job.keyId !== undefined) await deps.rescueSlots?.release(job.keyId, job.id);
  return {
    job: { id: job.id, poolId: job.poolId, taskId: job.taskId, chosen: job.chosen, expected: job.expected },
    status,
    completed: stored.length,
    failed,
    rescued: rewards.some((r) => r !== rewards[0]) || rewards.some((r) => r > 0),
    spent: { policyTokens: job.spentPolicyTokens ?? 0, policySeconds: (job.spentPolicyMs ?? 0) / 1000, environmentSeconds: (job.spentEnvironmentMs ?? 0) / 1000 },
    rollouts: stored.map(({ index, harnessId, reward, success, failureTags, steps }) => ({ index, harnessId, reward, success, failureTags, steps })),
  };
}

/**
 * The longest a status read may wait for progress (`?wait=`), how often it looks, and every how
 * many looks it reads the rescue's record too: a look is one small read (its rollouts' summaries,
 * no trajectories), so it looks often enough that a rescue of a few hundred ms is answered within
 * a few tens of ms of its end; a failed slot or a cancel (on the record) is seen within 200 ms.
 */
export const RESCUE_WAIT = { maxSeconds: 20, pollMs: 25, recordEvery: 8 } as const;

/** A status read's query: wait up to `wait` seconds until more than `seen` slots have finished. */
export const RescueWaitQuery = z.object({
  wait: z.coerce.number().min(0).max(RESCUE_WAIT.maxSeconds).default(0),
  seen: z.coerce.number().int().min(0).default(0),
});
export type RescueWaitQuery = z.infer<typeof RescueWaitQuery>;

/**
 * A rescue's status once it has moved past `seen` slots finished (stored or given up on), or it
 * is no longer running, or `wait` seconds have passed: a trainer follows a rescue slot by slot
 * without polling in a loop of its own.
 *
 * @example
 * const next = await waitForRescue("rsc_1", { seen: 3, wait: 10 }, deps, key);
 */
export async function waitForRescue(
  id: string,
  opts: { seen: number; wait: number },
  deps: { jobs: RescueJobStore; rollouts: RolloutStore; clock: Clock; rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
): Promise<RescueStatus> {
  const until = deps.clock.now() + Math.min(opts.wait, RESCUE_WAIT.maxSeconds) * 1000;
  let status = await rescueStatus(id, deps, key);
  for (let look = 1; ; look++) {
    if (status.status !== "running" || status.completed + status.failed.length > opts.seen || deps.clock.now() >= until) return status;
    await deps.clock.sleep(RESCUE_WAIT.pollMs);
    // Most looks read the summaries alone (one request); the rescue's record too when one more is stored, and every few looks (a failed slot, a cancel).
    if (look % RESCUE_WAIT.recordEvery === 0) status = await rescueStatus(id, deps, key);
    else {
      const stored = await deps.rollouts.summaries(id);
      if (stored.length > status.completed) status = await statusOf(id, await deps.jobs.get(id), stored, deps, key);
    }
  }
}

/**
 * Cancels a rescue for its key: slots not started are never run (the dispatch worker skips them),
 * slots running finish and are kept. Cancelling again, or a finished rescue, changes nothing.
 *
 * @example
 * const status = await cancelRescue("rsc_1", deps, key);
 */
export async function cancelRescue(
  id: string,
  deps: { jobs: RescueJobStore; rollouts: RolloutStore; clock: Clock; rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
): Promise<RescueStatus> {
  await rescueStatus(id, deps, key); // not found for another key
  await deps.jobs.cancel(id, deps.clock.now());
  return rescueStatus(id, deps, key);
}
