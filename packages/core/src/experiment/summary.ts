import { z } from "zod";
import { CurvePoint, RescueCounters, RolloutCounts, UtilitySnapshot } from "../training/train-state.ts";

const Score = z.object({ passAt3: z.number(), avgAt3: z.number() });
const SplitScores = z.object({ train: Score, heldout: Score });

export const ArmSeedResult = z.object({
  seed: z.number().int(),
  rollouts: z.number(),
  rolloutBreakdown: RolloutCounts.omit({ total: true }),
  h0: SplitScores,
  /** H0 scores per task family, on train and held-out. */
  byFamily: z.object({ train: z.record(z.string(), Score), heldout: z.record(z.string(), Score) }),
  /** H0 held-out scores per latent requirement combination (`family:req+req`), for diagnosis. */
  byCombination: z.object({ heldout: z.record(z.string(), Score) }).default({ heldout: {} }),
  behaviours: z.record(z.string(), z.number()),
  rank1: z.object({ heldout: Score }).optional(),
  rescue: RescueCounters,
  curve: z.array(CurvePoint),
  /** Sibling rescue utilities: step 0 from the evolution-time profiles, then each re-anchoring. */
  utilities: z.array(UtilitySnapshot),
  /** The repair direction of each sibling of this seed's pool (ids are only unique per pool). */
  siblingDirections: z.record(z.string(), z.string()),
  routerAccuracy: z
    .object({ audited: z.number(), rescuable: z.number(), hitRate: z.number(), randomHitRate: z.number() })
    .optional(),
  chosenCounts: z.record(z.string(), z.number()),
});
export type ArmSeedResult = z.infer<typeof ArmSeedResult>;

/** A seed's initial policy evaluated before any training: the reference point of every arm. */
export const SeedBaseline = z.object({
  seed: z.number().int(),
  h0: SplitScores,
  rank1: z.object({ heldout: Score }),
  behaviours: z.record(z.string(), z.number()),
  /** H0 held-out scores per requirement combination (DBBench: per row type), kept in the run's checkpoint. */
  byCombination: z.object({ heldout: z.record(z.string(), Score) }).optional(),
});
export type SeedBaseline = z.infer<typeof SeedBaseline>;

export const ArmSummary = z.object({
  name: z.string(),
  rollouts: z.number(),
  h0: SplitScores,
  rank1: z.object({ before: z.object({ heldout: Score }), after: z.object({ heldout: Score }) }).optional(),
  perSeed: z.array(ArmSeedResult),
});
export type ArmSummary = z.infer<typeof ArmSummary>;

export const ExperimentSummary = z.object({
  seeds: z.array(z.number().int()),
  config: z.record(z.string(), z.unknown()),
  /** The frozen pool each seed trained with, by seed. */
  poolVersions: z.record(z.string(), z.string()),
  initial: SplitScores.extend({ rank1: z.object({ heldout: Score }), behaviours: z.record(z.string(), z.number()) }),
  /** `behaviours` is absent in summaries written before it was recorded per seed. */
  initialPerSeed: z.array(
    z.object({
      seed: z.number(),
      h0: SplitScores,
      rank1: z.object({ heldout: Score }),
      behaviours: z.record(z.string(), z.number()).optional(),
    }),
  ),
  arms: z.array(ArmSummary),
  suite: z.object({
    locality: z.number(),
    complementarity: z.number(),
    nonstationarity: z.number(),
    details: z.record(z.string(), z.unknown()),
  }),
});
export type ExperimentSummary = z.infer<typeof ExperimentSummary>;
