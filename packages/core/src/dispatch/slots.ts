import { z } from "zod";
import type { RolloutSpend } from "../callers/caller-rescue.ts";

/** The longest reason a failed slot keeps (an endpoint's or environment's text is cut there). */
export const SLOT_REASON_CHARS = 500;

/** Why a slot will never be stored: a stable code (an error code of this service's) and what happened, bounded. */
export const SlotFailure = z.object({
  code: z.string().min(1).max(64).default("ROLLOUT_FAILED"),
  reason: z.string().max(SLOT_REASON_CHARS),
});
export type SlotFailure = z.input<typeof SlotFailure>;

/**
 * What dispatch reads of a slot's job: whether it was cancelled, and what its slots spent so far (a caller rescue's
 * budget).
 */
export interface SlotJob {
  /** Its slots in all. */
  expected: number;
  cancelledAt?: number | undefined;
  spentPolicyTokens?: number | undefined;
  spentEnvironmentMs?: number | undefined;
}

/**
 * The jobs whose slots dispatch runs (a rescue's): each slot's failure recorded once, what its
 * rollouts spent added up, the job read (a cancelled one's slots are skipped, a caller's budget held).
 */
export interface SlotJobs {
  get(id: string): Promise<SlotJob | undefined>;
  /** Records that slot `index` of job `id` will never be stored, and why; a no-op for an unknown job. */
  recordFailure(id: string, index: number, failure: SlotFailure): Promise<void>;
  /**
   * Adds what one of its rollouts spent (atomically: concurrent slots lose nothing); a no-op for an unknown job, and
   * for `slot` when a spend of that slot was added already (a redelivered slot that finishes again).
   */
  addSpend(id: string, spend: RolloutSpend, slot?: number): Promise<void>;
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
  /**
   * Holds `slots` of the key's `limit` for rescue `id` until `until`, counting only holds unexpired at `now`; false
   * when they would pass the limit.
   */
  hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean>;
  /**
   * Several holds of one key at once, answered in order as {@link hold} would answer them one after another (a store
   * may write them together).
   */
  holdMany?(keyId: string, holds: readonly HoldRequest[]): Promise<boolean[]>;
  /**
   * Extends `id`'s unlapsed hold to `until` whatever the key's limit (a running rollout's lease); without it, a renewal
   * is a {@link hold} of the same id.
   */
  renew?(keyId: string, id: string, now: number, until: number): Promise<unknown>;
  /** Lets rescue `id`'s hold go (a no-op when it holds none). */
  release(keyId: string, id: string): Promise<void>;
  /** Slots the key's unexpired holds take at `now`. */
  held(keyId: string, now: number): Promise<number>;
}
