import { RateLimitedError } from "./errors.ts";
import type { Clock } from "../util/clock.ts";
import { KEY_LIMITS, type KeyRate } from "./keys.ts";

/** A token bucket: `tokens` left at `at` (ms). */
export interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Takes one request's token from `bucket` at `now`, refilled at `rate.perSecond` up to `rate.burst`:
 * the bucket after, and how long until a token is there when none is (0 when one was taken).
 *
 * @example
 * takeToken(undefined, 0, { perSecond: 1, burst: 1 }); // { bucket: { tokens: 0, at: 0 }, waitMs: 0 }
 */
export function takeToken(bucket: Bucket | undefined, now: number, rate: KeyRate): { bucket: Bucket; waitMs: number } {
  const elapsed = bucket ? Math.max(0, now - bucket.at) : 0;
  const tokens = Math.min(rate.burst, (bucket?.tokens ?? rate.burst) + (elapsed / 1000) * rate.perSecond);
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, at: now }, waitMs: 0 };
  return { bucket: { tokens, at: now }, waitMs: ((1 - tokens) / rate.perSecond) * 1000 };
}

/** The longest a request is told to wait: the gap between two requests at the slowest rate a key may be given. */
const MAX_WAIT_MS = 1000 / KEY_LIMITS.minPerSecond;

/** Keys whose buckets one limiter keeps (the least recently used goes first; a forgotten key starts full again). */
export const RATE_LIMITER_KEYS = 10_000;

/**
 * Each key's token bucket in this process (one API instance): a request past its key's rate is
 * refused with its wait ({@link RateLimitedError}), costing no store request; a key without a rate
 * is never held back. Buckets are per instance, so a deployment's rate for a key is at most its
 * rate times the API's instances.
 */
export class KeyRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock) {}

  take(key: { id: string; rate?: KeyRate | undefined }): void {
    if (!key.rate) return;
    const { bucket, waitMs } = takeToken(this.buckets.get(key.id), this.clock.now(), key.rate);
    this.buckets.delete(key.id);
    this.buckets.set(key.id, bucket);
    if (this.buckets.size > RATE_LIMITER_KEYS) this.buckets.delete(this.buckets.keys().next().value!);
    // A wait is never longer than the slowest rate a key may be given leaves between two requests (a key stored before
    // that bound included).
    if (waitMs > 0) throw new RateLimitedError(key.rate.perSecond, Math.min(waitMs, MAX_WAIT_MS));
  }
}
