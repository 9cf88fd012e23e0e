import { z } from "zod";
import { CostOfGoods } from "./cost-of-goods.ts";

/**
 * What a quote of one configuration (an environment and a model) rests on: tasks per evaluation,
 * the rescue share, usage per rollout (measured on this configuration's finished runs, else the
 * deployment's), tokens per rollout and the model's GPU seconds per token.
 */
export const QuoteConfiguration = z
  .object({
    env: z.string().meta({ description: "the environment quoted: a family's name, or openenv for a caller's server" }),
    model: z.string().meta({
      description:
        "the model asked for; default: the deployment's first served model (the embedded suite: its own policy)",
    }),
    source: z.enum(["measured", "defaults"]).meta({
      description: "measured on this configuration's finished runs here, or the environment's declared defaults",
    }),
    jobs: z.number().int().min(0).meta({ description: "finished runs of this configuration the figures rest on" }),
    sampledTokensPerRollout: z.number().min(0).meta({
      description: "tokens the policy endpoint samples per rollout (appended prompt and completion of each turn)",
    }),
    generatedTokensPerRollout: z
      .number()
      .min(0)
      .default(0)
      .meta({ description: "of those, the completion tokens the model generates per rollout" }),
    trainedTokensPerTrainingRollout: z
      .number()
      .min(0)
      .meta({ description: "tokens trained on per training rollout (its sequences × epochs)" }),
    gpuSecondsPerToken: z
      .number()
      .min(0)
      .meta({ description: "the model's GPU seconds per token (`gpuPer` says which)" }),
    gpuPer: z.enum(["generated", "sampledAndTrained"]).default("sampledAndTrained").meta({
      description:
        "the tokens the GPU rate is per: generated ones (its device time goes with decoding), or every token sampled and trained (quotes recorded before generated tokens were metered)",
    }),
    gpuSource: z.enum(["measured", "declared", "defaults"]).meta({
      description:
        "measured on the model's finished runs here (any environment), declared with the served model (GET /v1/models), or the default",
    }),
  })
  .meta({
    description:
      "What an experiment's quote rests on for its environment and model: tokens per rollout and the model's GPU seconds per token",
  });
export type QuoteConfiguration = z.infer<typeof QuoteConfiguration>;

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
  /**
   * An experiment's environment and model: its tokens per rollout and the model's GPU seconds per
   * token (usage's `sampledTokens`, `trainedTokens` and `gpuSeconds` are priced on them), measured on
   * this deployment's finished runs of it once it has some. Absent in rescue and pool quotes and in quotes recorded
   * before.
   */
  configuration: QuoteConfiguration.optional(),
});
export type QuoteBasis = z.infer<typeof QuoteBasis>;

/** What a budget's caps do to a quoted experiment (or, for a rescue, that its budget may stop it sooner). */
export const QuoteCaps = z.object({
  /** Rollouts the plan runs to its end, no cap applied. */
  plannedRollouts: z.number().int().min(0),
  /** The budget's rollout cap: the run stops cleanly at it, so the quote prices at most this many. */
  rollouts: z.number().int().positive().optional(),
  /** The budget's cap on the charge at the tariff: a request quoted above it is refused (402) before any work. */
  usd: z.number().positive().optional(),
  /**
   * The caps that bind: "rollouts" when the plan runs more than the cap (the quote prices the
   * rollouts up to it), "usd" when the quoted charge is above the USD cap (the run is refused).
   */
  binding: z.array(z.enum(["rollouts", "usd"])),
  /** The same in words. */
  note: z.string(),
});
export type QuoteCaps = z.infer<typeof QuoteCaps>;

/** Where a run may end before its whole plan, and what it is billed then (every rollout it ran counts). */
export const QuotePath = z.object({
  name: z.string().meta({ description: "where the run ends, in words" }),
  failsWith: z.string().meta({ description: "the error code a run ending there fails with" }),
  rollouts: z.number().int().min(0),
  chargeUsd: z.number().min(0),
  note: z.string(),
});
export type QuotePath = z.infer<typeof QuotePath>;

export const Quote = z.object({
  rollouts: z.number().int().min(0),
  /** Estimated usage: compute time, GB-seconds, DynamoDB units, SQS requests, GPU seconds. */
  usage: z.record(z.string(), z.number()).meta({
    description:
      "estimated usage by field: rollouts, computeMs, lambdaGbSeconds, dynamoReadUnits, dynamoWriteUnits, sqsRequests, gpuSeconds, and for an experiment sampledTokens and trainedTokens (the tokens its environment's episodes sample and train at the model)",
  }),
  costOfGoods: CostOfGoods,
  /** What the key would be charged at the tariff. */
  chargeUsd: z.number().min(0),
  basis: QuoteBasis,
  /**
   * Present for an experiment, and for a rescue with a budget of its own; absent in quotes recorded before caps were
   * quoted.
   */
  caps: QuoteCaps.optional(),
  /**
   * The runs that end early by design of the request (an evolution first that may keep no sibling): what each is
   * billed. Any other failure is billed for what ran, at most the whole quote.
   */
  paths: z.array(QuotePath).optional(),
  /** What the figures rest on, in words: this deployment's finished runs, or declared defaults before any. */
  note: z.string().optional(),
});
export type Quote = z.infer<typeof Quote>;
