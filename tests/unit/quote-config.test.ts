import { describe, expect, it } from "vitest";
import {
  DEFAULT_GPU_SECONDS_PER_TOKEN,
  ENV_QUOTE_DEFAULTS,
  addJobToConfiguration,
  configurationBasis,
  quote,
  quoteConfigKeys,
  DEFAULT_QUOTE_BASIS,
} from "@harness-s/core/quoting";
import { PriceList, Prices, isQuoteBasisKey, zeroUsage } from "@harness-s/core/billing";
import { ExperimentRequest } from "@harness-s/core/experiment";
import { MemoryUsageMeter } from "@harness-s/adapters/stores";

// Issue 57, item 3: a quote prices an experiment's environment and model. Arithmetic by hand:
// one seed, arms grpo and harness-s, one step of a group of two (4 training rollouts), one task per
// evaluation, three samples: 9 baseline + 8 grpo + 2 + rescues + 9 harness-s rollouts.
const prices = { tariff: Prices.parse({}), priceList: PriceList.parse({}) };
const plan = (env: unknown, model?: string) =>
  ExperimentRequest.parse({
    env,
    ...(model ? { model } : {}),
    arms: ["grpo", "harness-s"],
    train: { steps: 1, batchSize: 1, groupSize: 2, curveEvery: 0, reanchorBudget: 0 },
    evalTasks: 1,
    evalSamples: 3,
  });

describe("quotes by environment and model", () => {
  it("before any run: the environment's declared tokens per rollout and the default GPU rate; the embedded suite on its own policy samples none", async () => {
    const meter = new MemoryUsageMeter();
    const dbbench = await configurationBasis(meter, { env: "dbbench", model: "a" });
    expect(dbbench.configuration).toMatchObject({
      env: "dbbench",
      model: "a",
      source: "defaults",
      jobs: 0,
      gpuSource: "defaults",
      gpuSecondsPerToken: DEFAULT_GPU_SECONDS_PER_TOKEN,
    });
    expect(dbbench.configuration.sampledTokensPerRollout).toBe(ENV_QUOTE_DEFAULTS.dbbench!.sampledTokensPerRollout);
    expect((await configurationBasis(meter, { env: "embedded" })).configuration).toMatchObject({
      sampledTokensPerRollout: 0,
      trainedTokensPerTrainingRollout: 0,
    });
    const q = quote({ experiment: plan("dbbench", "a") }, DEFAULT_QUOTE_BASIS, prices, dbbench);
    const d = ENV_QUOTE_DEFAULTS.dbbench!;
    expect(q.usage.sampledTokens).toBe(q.rollouts * d.sampledTokensPerRollout);
    expect(q.usage.trainedTokens).toBe(4 * d.trainedTokensPerTrainingRollout);
    expect(q.usage.gpuSeconds).toBeCloseTo(
      (q.usage.sampledTokens! + q.usage.trainedTokens!) * DEFAULT_GPU_SECONDS_PER_TOKEN,
      9,
    );
  });

  it("a caller's environment is counted from its posted splits", async () => {
    const splits = ["train", "train", "dev", "held-out", "held-out", "held-out"];
    const env = {
      kind: "openenv" as const,
      url: "https://env.example.com",
      tasks: splits.map((split, i) => ({ id: `t${i}`, split })),
    };
    expect((await configurationBasis(new MemoryUsageMeter(), { env: env as never })).evalTasks).toEqual({
      train: 2,
      heldout: 3,
    });
  });

  it("after a finished run: its configuration's tokens per rollout, rescue share and usage per rollout, the model's GPU seconds per token; its rows are nobody's to pay", async () => {
    const meter = new MemoryUsageMeter();
    const used = {
      ...zeroUsage,
      rollouts: 30,
      computeMs: 30_000,
      sampledTokens: 45_000,
      trainedTokens: 15_000,
      gpuSeconds: 12,
    };
    await addJobToConfiguration(meter, { env: "dbbench", model: "a" }, used, {
      training: 4,
      rescueTraining: 2,
      rescueExtra: 4,
    });
    const basis = await configurationBasis(meter, { env: "dbbench", model: "a" });
    expect(basis.configuration).toMatchObject({
      source: "measured",
      jobs: 1,
      sampledTokensPerRollout: 1_500,
      trainedTokensPerTrainingRollout: 3_750,
      gpuSecondsPerToken: 12 / 60_000,
      gpuSource: "measured",
    });
    expect(basis.rescueShare).toBe(2);
    // The model's GPU rate carries to another environment; its tokens there are still the defaults.
    expect((await configurationBasis(meter, { env: "appworld", model: "a" })).configuration).toMatchObject({
      source: "defaults",
      gpuSource: "measured",
      gpuSecondsPerToken: 12 / 60_000,
    });
    const q = quote({ experiment: plan("dbbench", "a") }, DEFAULT_QUOTE_BASIS, prices, basis);
    // 9 + 8 + (2 + 2 × 2 rescues + 9) = 32 rollouts at 1 s of compute each.
    expect(q.rollouts).toBe(32);
    expect(q.usage).toMatchObject({ sampledTokens: 48_000, trainedTokens: 15_000, computeMs: 32_000 });
    expect(q.usage.gpuSeconds).toBeCloseTo(63_000 * (12 / 60_000), 9);
    expect(q.chargeUsd).toBeCloseTo(
      32 * prices.tariff.perRollout + 32 * prices.tariff.perComputeSecond + q.costOfGoods.totalUsd,
      9,
    );
    expect(Object.values(quoteConfigKeys("dbbench", "a")).every(isQuoteBasisKey)).toBe(true);
  });
});
