import { describe, expect, it } from "vitest";
import {
  DEFAULT_GPU_SECONDS_PER_TOKEN,
  ENV_QUOTE_DEFAULTS,
  addJobToConfiguration,
  configurationBasis,
  quote,
  quoteConfigKeys,
  DEFAULT_QUOTE_BASIS,
  WAITING_FUNCTION_GB,
  CALLER_TURN_MS,
  modelWait,
} from "@harness-s/core/quoting";
import { PoolEvolveRequest, firstEvolutionRollouts } from "@harness-s/core/pools";
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
    // The GPU seconds go with the tokens the model generates.
    expect(dbbench.configuration.gpuPer).toBe("generated");
    expect(q.usage.generatedTokens).toBe(q.rollouts * d.generatedTokensPerRollout);
    expect(q.usage.gpuSeconds).toBeCloseTo(q.usage.generatedTokens! * DEFAULT_GPU_SECONDS_PER_TOKEN, 9);
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

// Issue 70, item 1: one quote for everything a run bills. A caller's environment without a pool evolves one first (its
// rollouts the run's, within its cap, the job's own bound); should that evolution keep no sibling the run fails there,
// and the quote says what it bills then. Before a configuration's first run, a rollout at a model holds a waiting
// function and the service's compute for at least its GPU seconds, at the rate the served model declares.
describe("the quote of a run that evolves its pool first, and of a model's wait", () => {
  const tool = { name: "submit", description: "commit", parameters: { type: "object" }, submit: true };
  const openenv = (splits: string[], poolId?: string) => ({
    kind: "openenv" as const,
    url: "https://env.example.com",
    tasks: splits.map((split, i) => ({ id: `t${i}`, family: "app", tools: [tool], split })),
    ...(poolId ? { poolId } : {}),
  });
  const splits = ["train", "dev", "dev", "held-out"];
  const quoted = async (env: unknown, budget?: { rollouts: number }) => {
    const req = { ...plan(env, "a"), ...(budget ? { budget } : {}) };
    const config = await configurationBasis(new MemoryUsageMeter(), { env: req.env, model: "a" }, 2e-4);
    return quote({ experiment: req }, DEFAULT_QUOTE_BASIS, prices, config);
  };

  it("prices the evolution before the run (2 dev tasks × 2 trials × (1 + 5 directions × 2 rounds × 3 candidates) = 124), and its failure path at those rollouts alone", async () => {
    const named = await quoted(openenv(splits, "pev_1"));
    const evolving = await quoted(openenv(splits));
    expect(evolving.rollouts - named.rollouts).toBe(firstEvolutionRollouts(2));
    expect(firstEvolutionRollouts(2)).toBe(124);
    expect(named.paths).toBeUndefined();
    expect(evolving.paths).toEqual([
      expect.objectContaining({ failsWith: "EVOLUTION_FAILED", rollouts: 124, chargeUsd: expect.any(Number) }),
    ]);
    expect(evolving.paths![0]!.chargeUsd).toBeLessThan(evolving.chargeUsd);
    expect(evolving.paths![0]!.chargeUsd).toBeCloseTo(evolving.chargeUsd - named.chargeUsd, 8);
  });

  it("a rollout cap inside the evolution stops the quote, and its failure path, at the cap", async () => {
    const capped = await quoted(openenv(splits), { rollouts: 8 });
    expect(capped.rollouts).toBe(8);
    expect(capped.paths![0]!.rollouts).toBe(8);
    expect(capped.paths![0]!.chargeUsd).toBeCloseTo(capped.chargeUsd, 9);
  });

  it("before any run, a rollout at a model waits its GPU seconds (at the served model's declared rate) in compute and Lambda time; once measured, nothing is added", async () => {
    const q = await quoted("dbbench");
    const gpu = q.usage.gpuSeconds!;
    expect(q.basis.configuration).toMatchObject({
      gpuSource: "declared",
      gpuSecondsPerToken: 2e-4,
      gpuPer: "generated",
    });
    expect(gpu).toBeCloseTo(q.usage.generatedTokens! * 2e-4, 9);
    expect(q.usage.computeMs).toBeCloseTo(DEFAULT_QUOTE_BASIS.perRollout.computeMs! * q.rollouts + gpu * 1000, 6);
    expect(q.usage.lambdaGbSeconds).toBeCloseTo(
      DEFAULT_QUOTE_BASIS.perRollout.lambdaGbSeconds! * q.rollouts + gpu * WAITING_FUNCTION_GB,
      6,
    );
    expect(q.note).toMatch(/no run has finished here/);
    const measured = { ...q.basis.configuration!, source: "measured" as const };
    expect(modelWait(gpu, measured)).toEqual({});
  });

  it("a finished run that metered generated tokens gives the model's rate per generated token, carried to another environment", async () => {
    const meter = new MemoryUsageMeter();
    const used = { ...zeroUsage, rollouts: 30, sampledTokens: 45_000, generatedTokens: 9_000, gpuSeconds: 18 };
    await addJobToConfiguration(meter, { env: "dbbench", model: "a" }, used, {
      training: 4,
      rescueTraining: 0,
      rescueExtra: 0,
    });
    const measured = await configurationBasis(meter, { env: "dbbench", model: "a" }, 1);
    expect(measured.configuration).toMatchObject({
      generatedTokensPerRollout: 300,
      gpuPer: "generated",
      gpuSecondsPerToken: 18 / 9_000,
      gpuSource: "measured",
    });
    const elsewhere = await configurationBasis(meter, { env: "openenv", model: "a" }, 1);
    expect(elsewhere.configuration).toMatchObject({
      source: "defaults",
      gpuSource: "measured",
      gpuSecondsPerToken: 2e-3,
    });
  });
});

describe("a pool evolution's quote (issue 70 item 1)", () => {
  it("prices its rollouts as the coordinator runs them (no store or queue request of their own) and its turns' wait at the caller's policy", () => {
    const pool = PoolEvolveRequest.parse({
      endpoint: "mine",
      environment: { kind: "openenv", url: "https://env.example.com" },
      devTasks: ["a", "b"].map((id) => ({
        id,
        family: "app",
        tools: [{ name: "submit", description: "", submit: true }],
      })),
      evolution: { directions: ["budget"], rounds: 1, candidatesPerRound: 1, trials: 1 },
    });
    const q = quote({ pool }, DEFAULT_QUOTE_BASIS, prices);
    const turns = 4 * pool.maxTurns;
    expect(q.rollouts).toBe(4);
    expect(q.usage).toMatchObject({
      computeMs: turns * CALLER_TURN_MS,
      lambdaGbSeconds: ((turns * CALLER_TURN_MS) / 1000) * WAITING_FUNCTION_GB,
    });
    expect(q.usage.dynamoWriteUnits ?? 0).toBe(0);
    expect(q.usage.sqsRequests ?? 0).toBe(0);
  });
});
