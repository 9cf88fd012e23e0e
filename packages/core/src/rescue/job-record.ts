import { z } from "zod";
import { CallerRollout } from "../callers/caller-rescue.ts";
import { SlotFailure, type SlotJobs } from "../dispatch/slots.ts";
import { Prices } from "../billing/cost-of-goods.ts";
import { Quote } from "../billing/quote-schema.ts";
import type { KeyPage, KeyPageRequest } from "../util/key-page.ts";

export const RescueJob = z.object({
  id: z.string().min(1),
  poolId: z.string().min(1),
  taskId: z.string().min(1),
  decisionId: z.string().min(1),
  chosen: z.array(z.string()).min(1),
  rolloutsPerHarness: z.number().int().min(1),
  expected: z.number().int().min(1),
  createdAt: z.number(),
  /** The API key that started it: only that key (or an admin key) may read it. */
  keyId: z.string().optional(),
  /**
   * Rollout slots the dispatch worker gave up on: a failure that cannot succeed on retry, or a message gone to the DLQ.
   */
  failures: z.array(SlotFailure.extend({ index: z.number().int().min(0) })).optional(),
  /** A rescue with the caller's own policy and environment (its trajectories are token-level). */
  caller: CallerRollout.optional(),
  /** When its key cancelled it: slots not started by then are never run. */
  cancelledAt: z.number().optional(),
  /** What its rollouts have spent so far, failed or not (a caller rescue's budget is held against it). */
  spentPolicyTokens: z.number().int().min(0).optional(),
  spentEnvironmentMs: z.number().min(0).optional(),
  /** Time its rollouts spent waiting on the caller's policy endpoint. */
  spentPolicyMs: z.number().min(0).optional(),
  /** What it was quoted when it was asked for (its actual usage is metered under the job: `UsageMeter.job`). */
  quote: Quote.optional(),
  /** The tariff it is charged at, fixed when it was asked for. */
  tariff: Prices.optional(),
});
export type RescueJob = z.infer<typeof RescueJob>;

/**
 * Rescue jobs: what dispatch needs of a rescue (its slots' failures and spend, its cancel) and the job service's own.
 */
export interface RescueJobStore extends SlotJobs {
  create(job: RescueJob): Promise<void>;
  get(id: string): Promise<RescueJob | undefined>;
  /** Marks job `id` cancelled at `at` (the first cancel's time stays); a no-op for an unknown job. */
  cancel(id: string, at: number): Promise<void>;
  /** The rescues key `keyId` started, newest first (`listPosition` order), a page at a time: never another key's. */
  listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<RescueJob>>;
}
