import { z } from "zod";
import { ARM_NAMES } from "../experiment/run-experiment.ts";
import { UnitCheckpoint } from "../experiment/unit-policies.ts";
import { ArmSeedResult, ExperimentSummary, SeedBaseline } from "../experiment/summary.ts";
import { Protocol } from "../task.ts";

/** `POST /v1/experiments`: which arms and seeds, training overrides, and a rollout budget cap. */
export const ExperimentRequest = z.object({
  arms: z.array(z.enum(ARM_NAMES)).min(1).default(["grpo", "grpo-budget", "harness-s"]),
  seeds: z.array(z.number().int().min(0)).min(1).max(20).default([1]),
  /** Overrides of the training config (validated against it). */
  train: z.record(z.string(), z.unknown()).default({}),
  evalSamples: z.number().int().min(3).max(20).default(3),
  /** "validation" evaluates on train-side tasks held back for tuning instead of the held-out split. */
  protocol: Protocol.default("test"),
  /** Every rollout counts (training, rescue, re-anchoring, evaluation); the run stops cleanly at the cap. */
  budget: z.object({ rollouts: z.number().int().positive() }).optional(),
});
export type ExperimentRequest = z.infer<typeof ExperimentRequest>;

export const ExperimentState = z.enum(["queued", "running", "done", "stopped", "failed"]);

export const ExperimentRecord = z.object({
  id: z.string().min(1),
  keyId: z.string().min(1),
  request: ExperimentRequest,
  status: ExperimentState,
  createdAt: z.number(),
  updatedAt: z.number(),
  /** While running: the coordinator's claim; a redelivery before it expires is a no-op. */
  leaseUntil: z.number().optional(),
  attempts: z.number().int().min(0),
  progress: z.object({ done: z.number().int(), total: z.number().int(), label: z.string() }),
  /** Cumulative over attempts: what was consumed is billed, and counts against the budget. */
  usage: z.object({ rollouts: z.number().int().min(0), computeMs: z.number().min(0) }),
  /** Finished (arm, seed) units and seed baselines: a later attempt resumes after them. */
  results: z.array(z.object({ arm: z.string(), result: ArmSeedResult })),
  baselines: z.array(SeedBaseline).default([]),
  /** The unit part-way through training, when its policy outlives the attempt (one at a time). */
  units: z.array(UnitCheckpoint).default([]),
  summary: ExperimentSummary.optional(),
  stopReason: z.string().optional(),
  error: z.string().optional(),
});
export type ExperimentRecord = z.infer<typeof ExperimentRecord>;

/** Experiments and their progress. `claim` is the coordinator's conditional take-over. */
export interface ExperimentStore {
  create(record: ExperimentRecord): Promise<void>;
  get(id: string): Promise<ExperimentRecord | undefined>;
  /** Marks the run `running` until `leaseUntil` if it is queued or its lease expired; else undefined. */
  claim(id: string, now: number, leaseUntil: number): Promise<ExperimentRecord | undefined>;
  save(record: ExperimentRecord): Promise<void>;
}

/** One training step of one (arm, seed) of a run, with what happened to each group. */
export const ExperimentStep = z.object({
  experimentId: z.string().min(1),
  seed: z.number().int(),
  arm: z.string().min(1),
  step: z.number().int().min(1),
  policyVersion: z.number().int(),
  rollouts: z.object({ train: z.number(), rescue: z.number(), resample: z.number(), reanchor: z.number(), total: z.number() }),
  groups: z.array(
    z.object({
      taskId: z.string(),
      meanReward: z.number(),
      allFail: z.boolean(),
      outcome: z.enum(["used", "replaced", "resampled", "dropped"]),
      chosen: z.array(z.string()).optional(),
    }),
  ),
});
export type ExperimentStep = z.infer<typeof ExperimentStep>;

/** Step records of runs; writing an existing (run, seed, arm, step) keeps the first. */
export interface ExperimentStepStore {
  put(step: ExperimentStep): Promise<void>;
  list(experimentId: string, filter?: { arm?: string; seed?: number }): Promise<ExperimentStep[]>;
}

/** Steps of a run matching `filter`, in (seed, arm, step) order: what every step store lists. */
export function selectSteps(steps: readonly ExperimentStep[], filter: { arm?: string; seed?: number } = {}): ExperimentStep[] {
  return steps
    .filter((s) => (filter.arm === undefined || s.arm === filter.arm) && (filter.seed === undefined || s.seed === filter.seed))
    .sort((a, b) => a.seed - b.seed || (a.arm < b.arm ? -1 : a.arm > b.arm ? 1 : 0) || a.step - b.step);
}

/** What an experiment costs, for pay-per-use (USD per rollout and per compute second). */
export const Prices = z.object({ perRollout: z.number().min(0).default(0.0002), perComputeSecond: z.number().min(0).default(0.00005) });
export type Prices = z.infer<typeof Prices>;

export function experimentCost(usage: ExperimentRecord["usage"], prices: Prices) {
  const usd = usage.rollouts * prices.perRollout + (usage.computeMs / 1000) * prices.perComputeSecond;
  return { ...usage, usd: Math.round(usd * 1e6) / 1e6 };
}
