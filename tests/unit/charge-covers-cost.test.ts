import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PriceList, chargeUsd, costOfGoods, tariffOver } from "@harness-s/core/billing";

// Issue 70 item 2: a charge is never below its cost of goods, for any usage and any price list the deployment is
// configured with (the tariff built over it by tariffOver), and the charge is a sum over usage, so the rule holds per
// request, per run and per day alike.
const amount = fc.double({ min: 0, max: 1e7, noNaN: true });
const usage = fc.record({
  rollouts: amount,
  computeMs: amount,
  requests: amount,
  lambdaGbSeconds: amount,
  dynamoReadUnits: amount,
  dynamoWriteUnits: amount,
  sqsRequests: amount,
  gpuSeconds: amount,
  llmCostUsd: fc.double({ min: 0, max: 1e3, noNaN: true }),
});
const unitPrice = fc.double({ min: 0, max: 1, noNaN: true });
const list = fc
  .record({
    lambdaPerGbSecond: unitPrice,
    lambdaPerRequest: unitPrice,
    dynamoPerReadUnit: unitPrice,
    dynamoPerWriteUnit: unitPrice,
    sqsPerRequest: unitPrice,
    gpuPerSecond: unitPrice,
  })
  .map((p) => PriceList.parse(p));

describe("the charge covers its cost of goods", () => {
  it("for any usage and price list: charge >= cost of goods (to the cent's billionth), and a day's charge is its runs' sum", () => {
    fc.assert(
      fc.property(usage, usage, list, (a, b, prices) => {
        const tariff = tariffOver(prices);
        for (const u of [a, b])
          expect(chargeUsd(u, tariff)).toBeGreaterThanOrEqual(costOfGoods(u, prices).totalUsd - 1e-9);
        const day = Object.fromEntries(Object.keys(a).map((k) => [k, a[k as keyof typeof a] + b[k as keyof typeof b]]));
        const sum = chargeUsd(a, tariff) + chargeUsd(b, tariff);
        expect(Math.abs(chargeUsd(day, tariff) - sum)).toBeLessThanOrEqual(Math.max(1e-9, sum * 1e-12) * 4);
      }),
      { numRuns: 300, seed: 70 },
    );
  });
});
