import { describe, expect, it } from "vitest";
import { MemoryUsageMeter } from "@harness-s/adapters/stores";
import { PriceList, costOfGoods, spendTellingMeter } from "@harness-s/core/billing";
import { jsonLinesLogger } from "@harness-s/core/observability";

// Issue 58, item 3: the stacks' spend series sums `costOfGoodsUsd` from every function's log lines;
// the meter each function writes through tells each write's cost as one `usage.metered` line.
describe("a meter that tells what each write cost", () => {
  const prices = PriceList.parse({});
  const setup = () => {
    const lines: string[] = [];
    const inner = new MemoryUsageMeter();
    return { lines, inner, meter: spendTellingMeter(inner, jsonLinesLogger({ out: (l) => lines.push(l) }), prices) };
  };

  it("writes through, then tells the key, the job and the write's cost of goods as the usage report prices it", async () => {
    const { lines, inner, meter } = setup();
    const used = { dynamoWriteUnits: 4, sqsRequests: 3, lambdaGbSeconds: 1.5, rollouts: 2 };
    await meter.add("k1", used, { jobId: "rsc_1" });
    expect((await inner.get("k1")).dynamoWriteUnits).toBe(4);
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({
        event: "usage.metered",
        keyId: "k1",
        jobId: "rsc_1",
        costOfGoodsUsd: costOfGoods(used, prices).totalUsd,
      }),
    ]);
    expect(JSON.parse(lines[0]!).costOfGoodsUsd).toBeGreaterThan(0);
  });

  it("tells a quota's count only when it was taken, and nothing for a write that failed or cost nothing", async () => {
    const { lines, meter } = setup();
    expect(await meter.addWithin("k2", "sqsRequests", 2, 3)).toBe(true);
    expect(await meter.addWithin("k2", "sqsRequests", 2, 3)).toBe(false);
    await meter.add("k2", { requests: 0 });
    expect(lines.map((l) => JSON.parse(l).keyId)).toEqual(["k2"]);
    const failing = spendTellingMeter(
      { ...new MemoryUsageMeter(), add: () => Promise.reject(new Error("store down")) } as never,
      jsonLinesLogger({ out: (l) => lines.push(l) }),
      prices,
    );
    await expect(failing.add("k3", { sqsRequests: 1 })).rejects.toThrow("store down");
    expect(lines).toHaveLength(1);
  });
});
