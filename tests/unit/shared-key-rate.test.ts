import { describe, expect, it } from "vitest";
import { ManualClock } from "@harness-s/core";
import {
  KeyRateLimiter,
  RateLimitedError,
  SharedKeyRate,
  blockOf,
  takeTokens,
  type RateGate,
} from "@harness-s/core/access";
import { MemoryRateBlocks } from "@harness-s/adapters/stores";

/** Requests of one key sent in turn to `gates` (API instances) for `ms`, one every `everyMs`: how many were let in. */
async function letIn(gates: readonly RateGate[], clock: ManualClock, ms: number, everyMs: number): Promise<number> {
  const key = { id: "k", rate: { perSecond: 10, burst: 10 } };
  let n = 0;
  for (let t = 0, i = 0; t < ms; t += everyMs, i++) {
    try {
      await gates[i % gates.length]!.take(key);
      n++;
    } catch (err) {
      if (!(err instanceof RateLimitedError)) throw err;
    }
    clock.advance(everyMs);
  }
  return n;
}

// Issue 71, item 4: a key's rate across API instances. Each instance's own bucket lets a key through at its rate
// times the instances; blocks leased from one shared bucket hold it to its rate whatever the instances.
describe("a key's rate across API instances", () => {
  it("four instances' own buckets let in four times the rate; leased blocks of one shared bucket never pass rate × t + burst", async () => {
    const ownClock = new ManualClock(0);
    const own = Array.from({ length: 4 }, () => new KeyRateLimiter(ownClock));
    // 10 s at one request every 5 ms (200/s) against a rate of 10/s, burst 10.
    const ownIn = await letIn(own, ownClock, 10_000, 5);
    expect(ownIn).toBeGreaterThan(4 * 100);
    const clock = new ManualClock(0);
    const store = new MemoryRateBlocks();
    const shared = Array.from({ length: 4 }, () => new SharedKeyRate(store, clock));
    const sharedIn = await letIn(shared, clock, 10_000, 5);
    expect(sharedIn).toBeLessThanOrEqual(10 * 10 + 10);
    // What lapses unused costs little: most of the rate is still let in.
    expect(sharedIn).toBeGreaterThan(0.8 * (10 * 10 + 10));
  });

  it("leases a tenth of a second of the rate at a time, and falls back to the instance's own bucket when the store fails", async () => {
    expect(blockOf({ perSecond: 10, burst: 10 })).toBe(1);
    expect(blockOf({ perSecond: 200, burst: 50 })).toBe(20);
    expect(blockOf({ perSecond: 1000, burst: 5 })).toBe(5);
    expect(takeTokens(undefined, 0, { perSecond: 10, burst: 20 }, 5)).toEqual({
      bucket: { tokens: 15, at: 0 },
      granted: 5,
      waitMs: 0,
    });
    const lines: string[] = [];
    const failing = new SharedKeyRate(
      { lease: () => Promise.reject(new Error("store down")) },
      new ManualClock(0),
      (l) => lines.push(l),
    );
    const key = { id: "k", rate: { perSecond: 1, burst: 1 } };
    await failing.take(key);
    await expect(failing.take(key)).rejects.toBeInstanceOf(RateLimitedError);
    expect(lines[0]).toMatch(/shared bucket failed \(Error: store down\); this instance's bucket decides/);
  });
});
