import { z } from "zod";
import { CallerRollout, type RolloutSpend } from "./caller-rescue.ts";
import type { KeyPage, KeyPageRequest } from "../util/key-page.ts";

/** The longest reason a failed slot keeps (an endpoint's or environment's text is cut there). */
export const SLOT_REASON_CHARS = 500;

/** Why a slot will never be stored: a stable code (an error code of this service's) and what happened, bounded. */
export const SlotFailure = z.object({ code: z.string().min(1).max(64).default("ROLLOUT_FAILED"), reason: z.string().max(SLOT_REASON_CHARS) });
export type SlotFailure = z.input<typeof SlotFailure>;

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
  /** Rollout slots the dispatch worker gave up on: a failure that cannot succeed on retry, or a message gone to the DLQ. */
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
});
export type RescueJob = z.infer<typeof RescueJob>;

export interface RescueJobStore {
  create(job: RescueJob): Promise<void>;
  get(id: string): Promise<RescueJob | undefined>;
  /** Records that slot `index` of job `id` will never be stored, and why; a no-op for an unknown job. */
  recordFailure(id: string, index: number, failure: SlotFailure): Promise<void>;
  /** Marks job `id` cancelled at `at` (the first cancel's time stays); a no-op for an unknown job. */
  cancel(id: string, at: number): Promise<void>;
  /** Adds what one of its rollouts spent (atomically: concurrent slots lose nothing); a no-op for an unknown job. */
  addSpend(id: string, spend: RolloutSpend): Promise<void>;
  /** The rescues key `keyId` started, newest first (`listPosition` order), a page at a time: never another key's. */
  listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<RescueJob>>;
}

/**
 * Each key's rescue slots in flight: a rescue holds its slots until it ends (released when its end
 * is seen) or until its hold expires (a hold never outlives the longest a rescue's slots can take,
 * so one that is never released stops counting by itself).
 */
/** One hold of {@link RescueSlots.hold}'s arguments after the key. */
export interface HoldRequest {
  id: string;
  slots: number;
  limit: number;
  now: number;
  until: number;
}

export interface RescueSlots {
  /** Holds `slots` of the key's `limit` for rescue `id` until `until`, counting only holds unexpired at `now`; false when they would pass the limit. */
  hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean>;
  /** Several holds of one key at once, answered in order as {@link hold} would answer them one after another (a store may write them together). */
  holdMany?(keyId: string, holds: readonly HoldRequest[]): Promise<boolean[]>;
  /** Lets rescue `id`'s hold go (a no-op when it holds none). */
  release(keyId: string, id: string): Promise<void>;
  /** Slots the key's unexpired holds take at `now`. */
  held(keyId: string, now: number): Promise<number>;
}
