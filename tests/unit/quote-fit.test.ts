import { describe, expect, it } from "vitest";
import { PriceList, Prices, isQuoteBasisKey, zeroUsage, type Usage } from "@harness-s/core/billing";
import {
  QUOTE_BASIS_KEY,
  QUOTE_FIT_KEYS,
  addJobToFit,
  measuredBasis,
  plannedRolloutKinds,
  quote,
} from "@harness-s/core/quoting";
import { MemoryUsageMeter } from "@harness-s/adapters/stores";

const prices = { tariff: Prices.parse({}), priceList: PriceList.parse({}) };
/** A finished job as the coordinator adds it: to the summed basis and to the fit. */
async function finish(meter: MemoryUsageMeter, used: Partial<Usage>, extra: number) {
  const job = { ...zeroUsage, ...used };
  await meter.add(QUOTE_BASIS_KEY, { ...job, requests: 1 });
  await addJobToFit(meter, job, extra);
}
const plan = {
  seeds: [1],
  arms: ["grpo", "harness-s"],
  train: { steps: 4, batchSize: 8 },
  evalSamples: 2,
  evalTasks: 10,
};

describe("the quote basis's two kinds of rollouts", () => {
  it("fits the usage per rollout and per extra rollout of an arm that rescues from jobs of different mixes, and quotes each kind at its own", async () => {
    // Prepare: writes cost 2 per rollout and 6 per extra one; SQS 0.3 and 1.5
    const meter = new MemoryUsageMeter();
    await finish(meter, { rollouts: 1000, dynamoWriteUnits: 2000, sqsRequests: 300 }, 0);
    await finish(meter, { rollouts: 700, dynamoWriteUnits: 2 * 500 + 6 * 200, sqsRequests: 150 + 300 }, 200);
    // Act
    const basis = await measuredBasis(meter);
    const q = quote({ experiment: plan }, basis, prices);
    // Assess
    expect(basis.perRollout.dynamoWriteUnits).toBeCloseTo(2, 9);
    expect(basis.perExtraRollout!.dynamoWriteUnits).toBeCloseTo(6, 9);
    expect(basis.perRollout.sqsRequests).toBeCloseTo(0.3, 9);
    expect(basis.perExtraRollout!.sqsRequests).toBeCloseTo(1.5, 9);
    const { rollouts, extra } = plannedRolloutKinds(plan, basis);
    expect(extra).toBeGreaterThan(0);
    expect(q.rollouts).toBe(rollouts);
    expect(q.usage.dynamoWriteUnits).toBeCloseTo(2 * (rollouts - extra) + 6 * extra, 6);
    // The fit's rows count payers' usage again: nobody's to pay, left out of the usage export
    expect(Object.values(QUOTE_FIT_KEYS).filter((k) => !isQuoteBasisKey(k))).toEqual([]);
  });

  it("keeps the average for both kinds after one job, when the jobs' mixes are alike, and for a field whose rates would fall below zero", async () => {
    const one = new MemoryUsageMeter();
    await finish(one, { rollouts: 700, dynamoWriteUnits: 2200 }, 200);
    const single = await measuredBasis(one);
    expect(single.perExtraRollout).toEqual(single.perRollout);

    const alike = new MemoryUsageMeter();
    await finish(alike, { rollouts: 700, dynamoWriteUnits: 2200 }, 200);
    await finish(alike, { rollouts: 1400, dynamoWriteUnits: 3000 }, 400);
    const same = await measuredBasis(alike);
    expect(same.perRollout.dynamoWriteUnits).toBeCloseTo(5200 / 2100, 9);
    expect(same.perExtraRollout).toEqual(same.perRollout);

    const meter = new MemoryUsageMeter();
    await finish(meter, { rollouts: 1000, dynamoWriteUnits: 2000, computeMs: 30_000 }, 0);
    await finish(meter, { rollouts: 700, dynamoWriteUnits: 2200, computeMs: 5_000 }, 200);
    const basis = await measuredBasis(meter);
    expect(basis.perRollout.computeMs).toBeCloseTo(35_000 / 1700, 9);
    expect(basis.perExtraRollout!.computeMs).toBeCloseTo(35_000 / 1700, 9);
    expect(basis.perExtraRollout!.dynamoWriteUnits).toBeCloseTo(6, 9);
  });
});
