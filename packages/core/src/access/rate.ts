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
 * rate times the API's instances: the embedded API's, and {@link SharedKeyRate}'s when its store fails.
 */
export class KeyRateLimiter implements RateGate {
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

/** What lets a key's request through its rate: this instance's buckets ({@link KeyRateLimiter}) or shared ones. */
export interface RateGate {
  /** Takes one token of the key's rate, or throws RateLimitedError with its wait; a key without a rate passes. */
  take(key: { id: string; rate?: KeyRate | undefined }): void | Promise<void>;
}

/**
 * Takes up to `want` tokens from `bucket` at `now`, refilled at `rate.perSecond` up to `rate.burst`: the bucket after,
 * the tokens granted (whole ones, at most `want`), and how long until one is there when none was.
 *
 * @example
 * takeTokens(undefined, 0, { perSecond: 10, burst: 20 }, 5); // { bucket: { tokens: 15, at: 0 }, granted: 5, waitMs: 0 }
 */
export function takeTokens(
  bucket: Bucket | undefined,
  now: number,
  rate: KeyRate,
  want: number,
): { bucket: Bucket; granted: number; waitMs: number } {
  const elapsed = bucket ? Math.max(0, now - bucket.at) : 0;
  const tokens = Math.min(rate.burst, (bucket?.tokens ?? rate.burst) + (elapsed / 1000) * rate.perSecond);
  const granted = Math.min(want, Math.floor(tokens));
  if (granted >= 1) return { bucket: { tokens: tokens - granted, at: now }, granted, waitMs: 0 };
  return { bucket: { tokens, at: now }, granted: 0, waitMs: ((1 - tokens) / rate.perSecond) * 1000 };
}

/** Each key's shared bucket (one store for every API instance): blocks of its tokens leased from it. */
export interface RateBlocks {
  /** Takes up to `want` of the key's tokens at `now` (see {@link takeTokens}): those granted, or the wait for one. */
  lease(keyId: string, rate: KeyRate, now: number, want: number): Promise<{ granted: number; waitMs: number }>;
}

/**
 * How an instance leases a key's tokens: a block is a tenth of a second of the key's rate (at least 1, at most its
 * burst), and what an instance has not used of it a second after lapses (it is never handed on: a key's requests
 * across every instance never pass its rate, an instance that stops using a block only leaves tokens unspent).
 */
export const RATE_BLOCKS = { perSecondFraction: 0.1, lapseMs: 1_000 } as const;

/** The tokens one lease asks for: a tenth of a second of the key's rate, between 1 and its burst. */
export const blockOf = (rate: KeyRate) =>
  Math.max(1, Math.min(rate.burst, Math.ceil(rate.perSecond * RATE_BLOCKS.perSecondFraction)));

/**
 * A key's rate held across every API instance: each instance spends tokens it leased in blocks from the key's one
 * shared bucket ({@link RateBlocks}: a store request per block, not per request), so however many instances serve a
 * key, its requests over any window never pass `perSecond × window + burst`; what an instance leased and did not use
 * within {@link RATE_BLOCKS}.lapseMs lapses (the cost: a few requests refused early, never more let in). When the
 * store fails, this instance's own bucket decides ({@link KeyRateLimiter}), as before shared buckets, and `log` hears
 * why.
 */
export class SharedKeyRate implements RateGate {
  private readonly blocks = new Map<string, { left: number; until: number }>();
  /**
   * When each key's shared bucket, found empty, has its next token: a request before then is refused here, with no
   * store request (a flood past a key's rate costs the store one lease per token, not one per request).
   */
  private readonly emptyUntil = new Map<string, number>();
  private readonly fallback: KeyRateLimiter;

  constructor(
    private readonly store: RateBlocks,
    private readonly clock: Clock,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.fallback = new KeyRateLimiter(clock);
  }

  async take(key: { id: string; rate?: KeyRate | undefined }): Promise<void> {
    if (!key.rate) return;
    const now = this.clock.now();
    const held = this.blocks.get(key.id);
    if (held && held.left > 0 && held.until > now) {
      held.left--;
      return;
    }
    const empty = this.emptyUntil.get(key.id) ?? 0;
    if (empty > now) throw new RateLimitedError(key.rate.perSecond, Math.min(empty - now, MAX_WAIT_MS));
    let lease: { granted: number; waitMs: number };
    try {
      lease = await this.store.lease(key.id, key.rate, now, blockOf(key.rate));
    } catch (err) {
      this.log(`rate of key ${key.id}: its shared bucket failed (${String(err)}); this instance's bucket decides`);
      return this.fallback.take(key);
    }
    if (lease.granted < 1) {
      this.emptyUntil.set(key.id, now + lease.waitMs);
      if (this.emptyUntil.size > RATE_LIMITER_KEYS) this.emptyUntil.delete(this.emptyUntil.keys().next().value!);
      throw new RateLimitedError(key.rate.perSecond, Math.min(lease.waitMs, MAX_WAIT_MS));
    }
    this.emptyUntil.delete(key.id);
    // A block leased while another was in flight adds to what is left of it.
    const left = held && held.until > now ? held.left : 0;
    this.blocks.delete(key.id);
    this.blocks.set(key.id, { left: left + lease.granted - 1, until: now + RATE_BLOCKS.lapseMs });
    if (this.blocks.size > RATE_LIMITER_KEYS) this.blocks.delete(this.blocks.keys().next().value!);
  }
}
