import { describe, expect, it } from "vitest";
import { BudgetExceededError } from "@harness-s/core";
import { PriceList, Prices, zeroUsage, type Usage } from "@harness-s/core/billing";
import {
  QUOTE_BASIS_KEY,
  QUOTE_RESCUE_KEYS,
  addJobToFit,
  ensureWithinBudget,
  measuredBasis,
  quote,
  rescueRolloutsOf,
} from "@harness-s/core/quoting";
import { MemoryUsageMeter } from "@harness-s/adapters/stores";

// Issue 52: the arithmetic behind the bill, on a case small enough to count by hand, and item 16:
// a quote prices what the run will do, its budget's caps applied.

const prices = { tariff: Prices.parse({}), priceList: PriceList.parse({}) };
const breakdown = (train: number, rescue: number, resample: number, reanchor: number) => ({
  rolloutBreakdown: { train, rescue, resample, reanchor },
});

/**
 * The basis of two finished jobs: DynamoDB writes cost 2 per rollout and 6 per extra one (the fit
 * tells them apart: one job without extra rollouts, one with 200 of 700), and the jobs' arms that
 * rescue ran 32 training rollouts and 16 beyond them (harness-s 6 rescue + 2 re-anchor, grpo-budget
 * 8 resample; grpo's 16 do not count): a rescue share of exactly 16 / 32 = 0.5.
 */
async function handBasis() {
  const meter = new MemoryUsageMeter();
  const finish = async (used: Partial<Usage>, extra: number) => {
    const job = { ...zeroUsage, ...used };
    await meter.add(QUOTE_BASIS_KEY, { ...job, requests: 1 });
    await addJobToFit(meter, job, extra);
  };
  await finish({ rollouts: 1000, dynamoWriteUnits: 2000 }, 0);
  await finish({ rollouts: 700, dynamoWriteUnits: 2 * 500 + 6 * 200 }, 200);
  const rescue = rescueRolloutsOf([
    { arm: "grpo", result: breakdown(16, 0, 0, 0) },
    { arm: "harness-s", result: breakdown(16, 6, 0, 2) },
    { arm: "grpo-budget", result: breakdown(16, 0, 8, 0) },
  ]);
  await meter.add(QUOTE_RESCUE_KEYS.training, { rollouts: rescue.training });
  await meter.add(QUOTE_RESCUE_KEYS.extra, { rollouts: rescue.extra });
  return { basis: await measuredBasis(meter), rescue };
}

/**
 * Two seeds of three arms, 2 steps × 2 tasks × 2 rollouts (8 training rollouts an arm), no curve,
 * 2 tasks per split evaluated 3 times. Per seed, in the order a run spends them:
 *   initial evaluation  (2 train + 2 × 2 held-out) × 3                 = 18
 *   harness-s (first)   8 + 8 × 0.5 extra + (2 + 2 + 2 Rank-1) × 3     = 30, 4 extra
 *   grpo                8 + (2 + 2) × 3                                = 20
 *   grpo-budget         8 + 8 × 0.5 extra + (2 + 2) × 3                = 24, 4 extra
 * = 92 a seed, 184 in all, 16 of them extra.
 */
const plan = (budget?: { rollouts: number; usd?: number }) => ({
  seeds: [1, 2],
  arms: ["grpo", "grpo-budget", "harness-s"],
  train: { steps: 2, batchSize: 2, groupSize: 2, curveEvery: 0 },
  evalSamples: 3,
  evalTasks: 2,
  ...(budget ? { budget } : {}),
});

describe("a quote's rescue, resample and re-anchor arithmetic, counted by hand", () => {
  it("measures the rescue share from every kind of extra rollout of the arms that rescue, and prices each kind at its own rate", async () => {
    const { basis, rescue } = await handBasis();
    expect(rescue).toEqual({ training: 32, extra: 16 });
    expect(basis.rescueShare).toBe(0.5);
    expect(basis.perRollout.dynamoWriteUnits).toBeCloseTo(2, 9);
    expect(basis.perExtraRollout!.dynamoWriteUnits).toBeCloseTo(6, 9);

    const q = quote({ experiment: plan() }, basis, prices);
    expect(q.rollouts).toBe(184);
    expect(q.usage.dynamoWriteUnits).toBeCloseTo(2 * (184 - 16) + 6 * 16, 6); // 432
    expect(q.costOfGoods.dynamoUsd).toBeCloseTo(432 * 0.625e-6, 9);
    expect(q.chargeUsd).toBeCloseTo(184 * 0.0002 + q.costOfGoods.totalUsd, 9); // no compute in this basis; goods at cost
    expect(q.caps).toMatchObject({ plannedRollouts: 184, binding: [] });
  });
});

describe("a quote under its budget's caps (issue 52, item 16)", () => {
  it("prices the rollouts up to the rollout cap, in the order the run spends them, and says the cap binds", async () => {
    const { basis } = await handBasis();
    // 33: the initial evaluation (18), then 15 of harness-s's 30, its 4 extra pro rata: 2
    const q = quote({ experiment: plan({ rollouts: 33 }) }, basis, prices);
    expect(q.rollouts).toBe(33);
    expect(q.usage.dynamoWriteUnits).toBeCloseTo(2 * 31 + 6 * 2, 6);
    expect(q.chargeUsd).toBeCloseTo(33 * 0.0002 + q.costOfGoods.totalUsd, 9);
    expect(q.caps).toEqual({
      plannedRollouts: 184,
      rollouts: 33,
      binding: ["rollouts"],
      note: "the plan runs 184 rollouts and its budget stops it at 33: quoted for those 33",
    });
    // 100: the first seed whole (92, 8 extra), then 8 of the second seed's initial evaluation
    const into = quote({ experiment: plan({ rollouts: 100 }) }, basis, prices);
    expect([into.rollouts, into.usage.dynamoWriteUnits]).toEqual([100, expect.closeTo(2 * 92 + 6 * 8, 6)]);
    // A cap the plan stays within does not bind
    expect(quote({ experiment: plan({ rollouts: 184 }) }, basis, prices).caps).toMatchObject({
      plannedRollouts: 184,
      rollouts: 184,
      binding: [],
    });
  });

  it("says a USD cap below the quoted charge refuses the run, and a rollout cap that brings the charge under it lets it start", async () => {
    const { basis } = await handBasis();
    const over = quote({ experiment: plan({ rollouts: 1000, usd: 0.03 }) }, basis, prices); // 184 rollouts: 0.0368 USD, and 432 write units at cost: 0.03707 USD
    expect(over.rollouts).toBe(184);
    expect(over.caps).toMatchObject({ usd: 0.03, binding: ["usd"] });
    expect(over.caps!.note).toMatch(
      /the quoted charge of 0\.03707 USD is above its budget's 0\.03 USD: it is refused \(402\) before any work/,
    );
    const meter = { get: async () => ({ ...zeroUsage }) };
    await expect(ensureWithinBudget(over, { id: "k" }, 0.03, { meter, ...prices })).rejects.toBeInstanceOf(
      BudgetExceededError,
    );

    const capped = quote({ experiment: plan({ rollouts: 33, usd: 0.03 }) }, basis, prices); // 0.0066 USD
    expect(capped.caps).toMatchObject({ rollouts: 33, usd: 0.03, binding: ["rollouts"] });
    expect(capped.caps!.note).toMatch(/its budget's 0\.03 USD stops it should its charge reach that$/);
    await expect(ensureWithinBudget(capped, { id: "k" }, 0.03, { meter, ...prices })).resolves.toBeUndefined();
  });

  it("says a caller rescue's own budget may stop it before its k × rollouts per harness, which the quote is the most of", async () => {
    const { basis } = await handBasis();
    const rescue = { poolId: "p", taskId: "t", failureTags: ["x"], failedEvents: [], k: 2, rolloutsPerHarness: 3 };
    expect(quote({ rescue }, basis, prices).caps).toBeUndefined();
    const caller = { budget: { policyTokens: 5000 } } as never; // only its budget is read here
    const q = quote({ rescue: { ...rescue, caller } }, basis, prices);
    expect(q.rollouts).toBe(6);
    expect(q.caps).toEqual({
      plannedRollouts: 6,
      binding: [],
      note: "at most 6 rollouts: its budget (5000 policy tokens) stops its slots once spent, which this quote does not price",
    });
  });
});
