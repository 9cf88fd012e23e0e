import { describe, expect, it } from "vitest";
import { systemClock } from "@harness-s/core";

describe("systemClock", () => {
  it("sleeps the time asked, and an abort ends the sleep at once with its timer cleared", async () => {
    const t0 = Date.now();
    await systemClock.sleep(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
    const stop = new AbortController();
    const long = systemClock.sleep(3_600_000, stop.signal);
    stop.abort();
    await long; // a sleep whose timer stayed armed would hold this test (and a CLI's exit) for an hour
    const aborted = new AbortController();
    aborted.abort();
    await systemClock.sleep(3_600_000, aborted.signal);
    expect(Date.now() - t0).toBeLessThan(60_000);
  });
});
