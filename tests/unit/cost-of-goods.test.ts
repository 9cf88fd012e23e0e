import { describe, expect, it } from "vitest";
import { BudgetExceededError } from "@harness-s/core";
import {
  DEFAULT_QUOTE_BASIS,
  QUOTE_BASIS_KEY,
  QUOTE_RESCUE_KEYS,
  basisFrom,
  ensureWithinBudget,
  measuredBasis,
  plannedRollouts,
  quote,
  rescueRolloutsOf,
} from "@harness-s/core/quoting";
import {
  PriceList,
  Prices,
  UsagePeriod,
  costOfGoods,
  renderUsage,
  usageByDay,
  zeroUsage,
} from "@harness-s/core/billing";
import { ExperimentConfig, inProcessRunners, runExperimentToEnd } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { ConsumptionMeter, capacityUnits, sqsRequests } from "@harness-s/adapters/metering";
import { MemoryUsageMeter } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

const prices = { tariff: Prices.parse({}), priceList: PriceList.parse({}) };

describe("the price list and cost of goods", () => {
  it("defaults to us-east-1 on-demand prices, each provider's part apart", () => {
    expect(PriceList.parse({})).toMatchObject({
      region: "us-east-1",
      lambdaPerGbSecond: 0.0000166667,
      dynamoPerReadUnit: 0.125e-6,
      dynamoPerWriteUnit: 0.625e-6,
      sqsPerRequest: 0.4e-6,
    });
    const cog = costOfGoods(
      {
        requests: 1_000_000,
        lambdaGbSeconds: 1000,
        dynamoReadUnits: 1e6,
        dynamoWriteUnits: 1e6,
        sqsRequests: 1e6,
        gpuSeconds: 3600,
        llmCostUsd: 2,
      },
      prices.priceList,
    );
    expect(cog).toEqual({
      lambdaUsd: 0.2166667,
      dynamoUsd: 0.75,
      sqsUsd: 0.4,
      gpuUsd: 1.006,
      votersUsd: 2,
      totalUsd: 4.3726667,
    });
    expect(() => PriceList.parse({ sqsPerRequest: -1 })).toThrow();
  });

  it("bills SQS per 64 KB chunk of payload, every call at least one; sums DynamoDB capacity of batches", () => {
    expect(sqsRequests("SendMessageCommand", { MessageBody: "x".repeat(64 * 1024) }, undefined)).toBe(1);
    expect(sqsRequests("SendMessageCommand", { MessageBody: "x".repeat(64 * 1024 + 1) }, undefined)).toBe(2);
    expect(
      sqsRequests(
        "SendMessageBatchCommand",
        { Entries: [{ MessageBody: "x".repeat(40_000) }, { MessageBody: "x".repeat(40_000) }] },
        undefined,
      ),
    ).toBe(2);
    expect(sqsRequests("ReceiveMessageCommand", {}, { Messages: [] })).toBe(1);
    expect(sqsRequests("DeleteMessageBatchCommand", {}, {})).toBe(1);
    expect(capacityUnits([{ CapacityUnits: 2 }, { CapacityUnits: 0.5 }])).toBe(2.5);
    expect(capacityUnits({ CapacityUnits: 1 })).toBe(1);
    expect(capacityUnits(undefined)).toBe(0);
  });

  it("keeps each scope's consumption its own under concurrency; calls outside any scope are unattributed", async () => {
    const meter = new ConsumptionMeter();
    const a = {};
    const b = {};
    const tick = () => new Promise((r) => setTimeout(r, 1));
    await Promise.all([
      meter.within(a, async () => {
        for (let i = 0; i < 5; i++) {
          await tick();
          meter.record({ sqsRequests: 1 });
        }
      }),
      meter.within(b, async () => {
        for (let i = 0; i < 3; i++) {
          await tick();
          meter.record({ dynamoWriteUnits: 1 });
        }
      }),
    ]);
    meter.record({ sqsRequests: 7 });
    expect(a).toEqual({ sqsRequests: 5 });
    expect(b).toEqual({ dynamoWriteUnits: 3 });
    expect(meter.takeUnattributed()).toEqual({ sqsRequests: 7 });
    expect(meter.takeUnattributed()).toEqual({});
    expect(meter.total).toEqual({ sqsRequests: 12, dynamoWriteUnits: 3 });
  });
});

describe("quotes", () => {
  it.each([
    ["every task", {}],
    ["evalTasks 5 per split", { evalTasks: 5 }],
  ])(
    "plans exactly the rollouts an in-process run without rescue uses (%s)",
    async (_name, evaluation) => {
      const setup = embeddedSetup(defaultEmbeddedSettings);
      const plan = {
        seeds: [5],
        arms: ["grpo"],
        train: { steps: 1, batchSize: 2, curveEvery: 1, curveTasks: 4 },
        evalSamples: 3,
        ...evaluation,
      };
      let used = 0;
      const inner = inProcessRunners(setup.env);
      await runExperimentToEnd(ExperimentConfig.parse({ ...plan, train: TrainConfig.parse(plan.train) }), {
        ...setup,
        runnerFor: (id, p, seed) => {
          const run = inner(id, p, seed);
          return (t, h, s) => {
            used++;
            return run(t, h, s);
          };
        },
      });
      expect(plannedRollouts(plan, DEFAULT_QUOTE_BASIS)).toBe(used);
    },
    60_000,
  );

  it("prices rollouts on the measured basis once jobs finished, else on the defaults; a rescue is k × rollouts per harness", () => {
    expect(basisFrom({ ...zeroUsage })).toBe(DEFAULT_QUOTE_BASIS);
    const measured = basisFrom({
      ...zeroUsage,
      requests: 2,
      rollouts: 1000,
      dynamoWriteUnits: 3000,
      computeMs: 20_000,
    });
    expect(measured).toMatchObject({ source: "measured", jobs: 2, perRollout: { dynamoWriteUnits: 3, computeMs: 20 } });
    const q = quote(
      { rescue: { poolId: "p", taskId: "t", failureTags: ["x"], failedEvents: [], k: 3, rolloutsPerHarness: 4 } },
      measured,
      prices,
    );
    expect(q.rollouts).toBe(12);
    expect(q.usage.dynamoWriteUnits).toBe(36);
    // The tariff's own units, and what it consumes at the providers passed through at cost (issue 70 item 2).
    expect(q.chargeUsd).toBeCloseTo(12 * 0.0002 + 0.24 * 0.00005 + q.costOfGoods.totalUsd, 9);
    expect(q.chargeUsd).toBeGreaterThanOrEqual(q.costOfGoods.totalUsd);
  });

  it("measures the rescue share over finished jobs' arms that rescue or resample, and leaves the quote rows out of the usage export", async () => {
    // Prepare
    const breakdown = (train: number, rescue: number, resample: number, reanchor: number) => ({
      rolloutBreakdown: { train, rescue, resample, reanchor },
    });
    const results = [
      { arm: "grpo", result: breakdown(64, 0, 0, 0) },
      { arm: "harness-s", result: breakdown(32, 20, 0, 4) },
      { arm: "grpo-budget", result: breakdown(32, 0, 24, 0) },
    ];
    const meter = new MemoryUsageMeter();
    // Act
    const rescue = rescueRolloutsOf(results);
    await meter.add(QUOTE_BASIS_KEY, { requests: 1, rollouts: 500, dynamoReadUnits: 1000 });
    await meter.add(QUOTE_RESCUE_KEYS.training, { rollouts: rescue.training });
    await meter.add(QUOTE_RESCUE_KEYS.extra, { rollouts: rescue.extra });
    await meter.add("buyer", { rollouts: 500 });
    const basis = await measuredBasis(meter);
    const today = new Date().toISOString().slice(0, 10);
    const rows = await usageByDay(
      { from: today, to: today, granularity: "day", keyId: "*" },
      { id: "admin", scopes: ["admin"] },
      { meter, ...prices },
    );
    // Assess: grpo does not rescue, so its 64 training rollouts are not in the share
    expect(rescue).toEqual({ training: 64, extra: 48 });
    expect(basis).toMatchObject({ source: "measured", jobs: 1, rescueShare: 0.75, perRollout: { dynamoReadUnits: 2 } });
    expect(basisFrom({ ...zeroUsage, requests: 1, rollouts: 500 }, { training: 0, extra: 0 }).rescueShare).toBe(
      DEFAULT_QUOTE_BASIS.rescueShare,
    );
    expect(rows.map((r) => r.keyId)).toEqual(["buyer"]);
  });

  it("refuses a quote above the run's own budget or what is left of the key's, and passes one within both", async () => {
    const q = quote(
      { rescue: { poolId: "p", taskId: "t", failureTags: ["x"], failedEvents: [], k: 2, rolloutsPerHarness: 50 } },
      DEFAULT_QUOTE_BASIS,
      prices,
    );
    const meter = { get: async () => ({ ...zeroUsage, rollouts: 4000 }) }; // 0.8 USD charged so far
    const deps = { meter, ...prices };
    await expect(ensureWithinBudget(q, { id: "k" }, q.chargeUsd / 2, deps)).rejects.toBeInstanceOf(BudgetExceededError);
    await expect(ensureWithinBudget(q, { id: "k", budgetUsd: 0.8 + q.chargeUsd / 2 }, undefined, deps)).rejects.toThrow(
      /left of this key's budget/,
    );
    await expect(
      ensureWithinBudget(q, { id: "k", budgetUsd: 0.8 + q.chargeUsd * 2 }, q.chargeUsd * 2, deps),
    ).resolves.toBeUndefined();
  });
});

describe("usage by period and its export", () => {
  it("takes whole UTC days, from before to, at most a year", () => {
    expect(UsagePeriod.parse({ from: "2026-01-01", to: "2026-01-31" })).toMatchObject({ granularity: "day" });
    expect(() => UsagePeriod.parse({ from: "2026-02-01", to: "2026-01-31" })).toThrow(/from must not be after to/);
    expect(() => UsagePeriod.parse({ from: "2025-01-01", to: "2026-12-31" })).toThrow(/at most 366 days/);
    expect(() => UsagePeriod.parse({ from: "1/1/2026", to: "2026-01-31" })).toThrow(/YYYY-MM-DD/);
  });

  it("writes CSV with every usage field a column (text quoted) and JSON lines", () => {
    const row = {
      keyId: 'k,"1"',
      day: "2026-12-03",
      usage: { ...zeroUsage, rollouts: 3, sqsRequests: 2 },
      costOfGoodsUsd: 0.0000008,
      chargeUsd: 0.0006,
    };
    const csv = renderUsage([row], "csv").split("\n");
    expect(csv[0]).toBe(["keyId", "day", ...Object.keys(zeroUsage), "costOfGoodsUsd", "chargeUsd"].join(","));
    expect(csv[1]!.startsWith('"k,""1""","2026-12-03",0,0,3,')).toBe(true);
    expect(csv[1]!.endsWith(",8e-7,0.0006")).toBe(true);
    expect(JSON.parse(renderUsage([row], "jsonl").trim())).toMatchObject({
      keyId: 'k,"1"',
      day: "2026-12-03",
      rollouts: 3,
      sqsRequests: 2,
      chargeUsd: 0.0006,
    });
  });
});
