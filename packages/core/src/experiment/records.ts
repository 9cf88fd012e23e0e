import { z } from "zod";
import type { LeasedJobStore } from "../util/leased-job.ts";
import { Prices, chargeUsd } from "../billing/cost-of-goods.ts";
import { Quote } from "../billing/quote-schema.ts";

import { ArmList } from "./arms.ts";
import { ExperimentEnv } from "./environment.ts";
import { Name } from "../names.ts";
import { UnitCheckpoint } from "./unit-policies.ts";
import { ArmSeedResult, ExperimentSummary, SeedBaseline } from "./summary.ts";
import { Protocol } from "../task.ts";
import { TrainConfig } from "../training/config.ts";
import { StepRecord } from "../training/train-state.ts";
import { MAX_TOP_K } from "../voting/top-k.ts";
import type { KeyPage, KeyPageRequest } from "../util/key-page.ts";

/**
 * What a run does: arms, seeds, training overrides, evaluation samples, protocol and an optional
 * rollout cap. Unbounded: the operator's own runs (the CLI's local-aws runtime) may be large.
 */
export const ExperimentPlan = z.object({
  /** Where it runs (default: the embedded suite). */
  env: ExperimentEnv.default("embedded"),
  /**
   * The base model every arm trains its own adapter on: one the deployment serves (`GET /v1/models`); none: the
   * family's own policy (the embedded suite's CPU policy).
   */
  model: Name.optional(),
  arms: ArmList.default(["grpo", "grpo-budget", "harness-s"]),
  seeds: z.array(z.number().int().min(0)).min(1).default([1]),
  /** Overrides of the training config (validated against it). */
  train: z.record(z.string(), z.unknown()).default({}),
  evalSamples: z.number().int().min(3).max(20).default(3),
  /** Evaluate at most this many tasks per split, evenly spaced (every task when absent). */
  evalTasks: z.number().int().min(1).optional(),
  /** "validation" evaluates on train-side tasks held back for tuning instead of the held-out split. */
  protocol: Protocol.default("test"),
  /**
   * Every rollout counts (training, rescue, re-anchoring, evaluation); the run stops cleanly at the
   * cap. `usd`: a cap on the charge at the tariff too (a quote above it is refused before any work).
   */
  budget: z.object({ rollouts: z.number().int().positive(), usd: z.number().positive().optional() }).optional(),
});
export type ExperimentPlan = z.infer<typeof ExperimentPlan>;

/** What one API caller may ask for: each bound is a 400 naming the field when passed. */
export const EXPERIMENT_LIMITS = {
  seeds: 20,
  evalSamples: 20,
  evalTasks: 10_000,
  /** Every experiment through the API has a rollout cap; this one when the request names none. */
  defaultBudgetRollouts: 100_000,
  maxBudgetRollouts: 2_000_000,
  /** Experiments one key may have queued or running at once (429 past it). */
  activePerKey: 2,
  train: {
    steps: 200,
    batchSize: 256,
    groupSize: 32,
    k: MAX_TOP_K,
    rescueRollouts: 64,
    reanchorEvery: 1000,
    reanchorBudget: 1000,
    epochs: 10,
    curveEvery: 1000,
    curveTasks: 200,
    auditTrials: 10,
  },
} as const;

const trainLimits: Record<string, number> = EXPERIMENT_LIMITS.train;

/**
 * Training overrides as a caller may send them: only TrainConfig's own keys (a typo such as
 * `step` is a 400, not a silently ignored field), each with its type and an upper bound.
 */
export const TrainOverrides = z
  .object(
    Object.fromEntries(
      Object.entries(TrainConfig.shape).map(([key, field]) => {
        const inner = (
          field instanceof z.ZodDefault || field instanceof z.ZodOptional ? field.unwrap() : field
        ) as z.ZodType;
        const max = trainLimits[key];
        return [key, (max !== undefined && inner instanceof z.ZodNumber ? inner.max(max) : inner).optional()];
      }),
    ),
  )
  .strict();

/** `POST /v1/experiments`: an {@link ExperimentPlan} within {@link EXPERIMENT_LIMITS}, with a budget always set. */
export const ExperimentRequest = z
  .object({
    env: ExperimentEnv.default("embedded"),
    model: Name.optional(),
    arms: ArmList.default(["grpo", "grpo-budget", "harness-s"]),
    seeds: z
      .array(z.number().int().min(0).max(1_000_000))
      .min(1)
      .max(EXPERIMENT_LIMITS.seeds)
      .refine((s) => new Set(s).size === s.length, "seeds must not repeat")
      .default([1]),
    train: TrainOverrides.default({}),
    evalSamples: z.number().int().min(3).max(EXPERIMENT_LIMITS.evalSamples).default(3),
    evalTasks: z.number().int().min(1).max(EXPERIMENT_LIMITS.evalTasks).optional(),
    protocol: Protocol.default("test"),
    budget: z
      .object({
        rollouts: z.number().int().positive().max(EXPERIMENT_LIMITS.maxBudgetRollouts),
        usd: z.number().positive().max(1e6).optional(),
      })
      .strict()
      .default({ rollouts: EXPERIMENT_LIMITS.defaultBudgetRollouts }),
  })
  .strict();
export type ExperimentRequest = z.infer<typeof ExperimentRequest>;

export const ExperimentState = z.enum(["queued", "running", "done", "stopped", "failed", "cancelled"]);
export type ExperimentState = z.infer<typeof ExperimentState>;
/**
 * Counts one of the run's rollouts finished (stored or failed) in its progress: the count a reader sees move, one
 * rollout at a time, however many run at once (saved with the record's next write).
 */
export function rolloutFinished(record: { progress: { rollouts?: number | undefined } }): void {
  record.progress = { ...record.progress, rollouts: (record.progress.rollouts ?? 0) + 1 };
}

/** States a run never leaves. */
export const TERMINAL_STATES: readonly ExperimentState[] = ["done", "stopped", "failed", "cancelled"];

export const ExperimentRecord = z.object({
  id: z.string().min(1),
  keyId: z.string().min(1),
  request: ExperimentPlan,
  status: ExperimentState,
  createdAt: z.number(),
  updatedAt: z.number(),
  /** While running: the coordinator's claim; a redelivery before it expires is a no-op. */
  leaseUntil: z.number().optional(),
  attempts: z.number().int().min(0),
  /**
   * Training steps done of all (`done`/`total`), what it is doing (`label`), and the rollouts it has run so far
   * (`rollouts`: written at least every few seconds while it runs).
   */
  progress: z.object({
    done: z.number().int(),
    total: z.number().int(),
    label: z.string(),
    rollouts: z.number().int().min(0).optional(),
  }),
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
  /** The failure's stable code (`EVOLUTION_FAILED`, `NOT_CONFIGURED`, …; `INTERNAL` for an unexpected one). */
  errorCode: z.string().optional(),
  /** What the run was quoted when it was asked for (its actual usage is metered under the job: `UsageMeter.job`). */
  quote: Quote.optional(),
  /** The tariff the run is charged at, fixed when it was asked for. */
  tariff: Prices.optional(),
  /** Set by `POST …/cancel` while the run is running; the coordinator stops at its next step. */
  cancelRequested: z.boolean().optional(),
});
export type ExperimentRecord = z.infer<typeof ExperimentRecord>;

/** Experiments and their progress. `claim` is the coordinator's conditional take-over. */
/** Experiment runs: leased jobs the coordinator claims (see {@link LeasedJobStore}), listed by key. */
export interface ExperimentStore extends LeasedJobStore<ExperimentRecord> {
  /** Key `keyId`'s runs, newest first (`listPosition` order), a page at a time: never another key's. */
  listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<ExperimentRecord>>;
}

/** One training step of one (arm, seed) of a run, with what happened to each group. */
export const ExperimentStep = StepRecord.extend({
  experimentId: z.string().min(1),
  seed: z.number().int(),
  arm: z.string().min(1),
});
export type ExperimentStep = z.infer<typeof ExperimentStep>;

/** Step records of runs; writing an existing (run, seed, arm, step) keeps the first. */
export interface ExperimentStepStore {
  put(step: ExperimentStep): Promise<void>;
  list(experimentId: string, filter?: { arm?: string; seed?: number }): Promise<ExperimentStep[]>;
}

/** Steps of a run matching `filter`, in (seed, arm, step) order: what every step store lists. */
export function selectSteps(
  steps: readonly ExperimentStep[],
  filter: { arm?: string; seed?: number } = {},
): ExperimentStep[] {
  return steps
    .filter(
      (s) =>
        (filter.arm === undefined || s.arm === filter.arm) && (filter.seed === undefined || s.seed === filter.seed),
    )
    .sort((a, b) => a.seed - b.seed || (a.arm < b.arm ? -1 : a.arm > b.arm ? 1 : 0) || a.step - b.step);
}

export function experimentCost(usage: ExperimentRecord["usage"], prices: Prices) {
  return { ...usage, usd: Math.round(chargeUsd(usage, prices) * 1e6) / 1e6 };
}
