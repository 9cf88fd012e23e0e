import { z } from "zod";
import { CostOfGoods } from "./cost-of-goods.ts";

/** What a quote's usage per rollout rests on: this deployment's finished jobs, or the defaults. */
export const QuoteBasis = z.object({
  source: z.enum(["measured", "defaults"]),
  /** Finished experiments the per-rollout usage was measured on (0: the defaults). */
  jobs: z.number().int().min(0),
  /** Rescue (or resample) rollouts per training rollout of an arm that rescues. */
  rescueShare: z.number().min(0),
  /** Tasks an evaluation sample covers on each split (the suite's evaluation sets). */
  evalTasks: z.object({ train: z.number().int().min(0), heldout: z.number().int().min(0) }),
  /** Usage per rollout: compute time and each cost-of-goods field. */
  perRollout: z.record(z.string(), z.number().min(0)),
  /**
   * Usage per extra rollout of an arm that rescues (rescue, resample, re-anchor: their routing
   * decisions' ballots ride on them), once finished jobs told the two kinds apart; else `perRollout`.
   * Absent in quotes recorded before it was measured.
   */
  perExtraRollout: z.record(z.string(), z.number().min(0)).optional(),
});
export type QuoteBasis = z.infer<typeof QuoteBasis>;

export const Quote = z.object({
  rollouts: z.number().int().min(0),
  /** Estimated usage: compute time, GB-seconds, DynamoDB units, SQS requests, GPU seconds. */
  usage: z.record(z.string(), z.number()),
  costOfGoods: CostOfGoods,
  /** What the key would be charged at the tariff. */
  chargeUsd: z.number().min(0),
  basis: QuoteBasis,
});
export type Quote = z.infer<typeof Quote>;
