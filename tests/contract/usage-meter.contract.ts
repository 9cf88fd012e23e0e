import { describe, expect, it } from "vitest";
import { ManualClock, type Clock } from "@harness-s/core";
import { zeroUsage, type UsageMeter } from "@harness-s/core/billing";

/** What every UsageMeter must do; `fresh(clock)` returns an empty meter on that clock. */
export function usageMeterContract(name: string, fresh: (clock?: Clock) => Promise<{ meter: UsageMeter }>): void {
  describe(`UsageMeter contract: ${name}`, () => {
    it("usage: adds atomically under concurrent calls; totals per key and job, rows per key and UTC day", async () => {
      const clock = new ManualClock(Date.parse("2026-03-01T23:59:00Z"));
      const s = await fresh(clock);
      await Promise.all(Array.from({ length: 20 }, () => s.meter.add("k1", { requests: 1, ballots: 3 })));
      clock.advance(120_000); // past midnight: the next writes land on 2026-03-02
      await s.meter.add(
        "k1",
        { rollouts: 4, computeMs: 1.5, dynamoWriteUnits: 2.5, sqsRequests: 3 },
        { jobId: "exp_1" },
      );
      await s.meter.add("k2", { requests: 1 });
      expect(await s.meter.get("k1")).toEqual({
        ...zeroUsage,
        requests: 20,
        ballots: 60,
        rollouts: 4,
        computeMs: 1.5,
        dynamoWriteUnits: 2.5,
        sqsRequests: 3,
      });
      expect(await s.meter.job("exp_1")).toEqual({
        ...zeroUsage,
        rollouts: 4,
        computeMs: 1.5,
        dynamoWriteUnits: 2.5,
        sqsRequests: 3,
      });
      expect(await s.meter.get("nobody")).toEqual(zeroUsage);
      expect(await s.meter.byDay({ keyId: "k1", from: "2026-03-01", to: "2026-03-02" })).toEqual([
        { keyId: "k1", day: "2026-03-01", usage: { ...zeroUsage, requests: 20, ballots: 60 } },
        {
          keyId: "k1",
          day: "2026-03-02",
          usage: { ...zeroUsage, rollouts: 4, computeMs: 1.5, dynamoWriteUnits: 2.5, sqsRequests: 3 },
        },
      ]);
      expect((await s.meter.byDay({ keyId: "k1", from: "2026-03-02", to: "2026-03-31" })).map((r) => r.day)).toEqual([
        "2026-03-02",
      ]);
      expect((await s.meter.byDay({ from: "2026-03-02", to: "2026-03-02" })).map((r) => r.keyId)).toEqual(["k1", "k2"]);
      expect(await s.meter.byDay({ keyId: "k2", from: "2026-03-01", to: "2026-03-01" })).toEqual([]);
    });
  });
}
