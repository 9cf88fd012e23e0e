import { z } from "zod";
import { AggregatorName } from "../voting/aggregate.ts";
import { DEFAULT_TOP_K, TopK } from "../voting/top-k.ts";
import { UpdateSettings } from "../rollout/update-settings.ts";
import { ContextCorrection } from "../rollout/context-correction.ts";

const update = UpdateSettings.shape;

export const TrainConfig = z.object({
  steps: z.number().int().min(1).default(20),
  batchSize: z.number().int().min(1).default(32),
  groupSize: z.number().int().min(2).default(4),
  k: TopK.default(DEFAULT_TOP_K),
  /** Rollouts per rescue, split over the k siblings (default: the group size). */
  rescueRollouts: z.number().int().min(1).optional(),
  aggregator: AggregatorName.default("borda"),
  /**
   * Chance that a rescue swaps its last Top-k pick for a random other sibling (chosen on validation, docs/results.md).
   */
  exploration: z.number().min(0).max(1).default(0.1),
  diverse: z.boolean().default(false),
  reanchorEvery: z.number().int().min(1).default(5),
  reanchorBudget: z.number().int().min(0).default(40),
  reanchorKeep: z.number().min(0).max(1).default(0.25),
  normalizeStd: z.boolean().default(true),
  learningRate: update.learningRate.default(0.1),
  clipEpsilon: update.clipEpsilon.default(0.2),
  klCoef: update.klCoef.default(0),
  epochs: update.epochs.default(2),
  rescueContext: update.rescueContext.default("as-generated"),
  rescueCorrection: ContextCorrection.default("none"),
  maskIntercepted: update.maskIntercepted.default(true),
  /** Evaluate H0 Avg@3 on an evenly spaced train subset every this many steps (0 = never) for the curves. */
  curveEvery: z.number().int().min(0).default(10),
  curveTasks: z.number().int().min(1).default(30),
  /** Audit one in this many routing decisions against all siblings (0 = never). */
  auditEvery: z.number().int().min(0).default(3),
  auditTrials: z.number().int().min(1).default(2),
});
export type TrainConfig = z.infer<typeof TrainConfig>;
