import { z } from "zod";

// The suite LM's recipe, apart from the build so that parsing flags does not load the build.

export const WarmStartOptions = z.object({
  /** Suite instances whose train and dev tasks (and evolved candidate harnesses) the data come from. */
  suiteSeeds: z.array(z.number().int()).min(1).default([9001, 9002, 9003, 9004]),
  /** Episodes per task under H0. */
  h0Samples: z.number().int().min(0).default(4),
  /** Episodes per task, each under a candidate harness drawn at random (kept or not by evolution). */
  siblingSamples: z.number().int().min(0).default(10),
  seed: z.number().int().default(0),
});
export type WarmStartOptions = z.infer<typeof WarmStartOptions>;

/** The instruction-following corpus (see `instruct-corpus.ts`); 0 conversations: none. */
export const InstructOptions = z.object({
  conversations: z.number().int().min(0).max(100_000).default(3000),
  /**
   * Share of a world's tools named with invented words (several tokens each) rather than the suite's names (one token
   * each, in random roles).
   */
  invented: z.number().min(0).max(1).default(0),
  seed: z.number().int().default(0),
});
export type InstructOptions = z.infer<typeof InstructOptions>;

/** The model's recipe (sizes in `harness_s_worker/suite_lm_recipe.py`: toy, small, base, large) and its warm start. */
export const SuiteLmRecipe = z.object({
  seed: z.number().int().default(0),
  size: z.enum(["toy", "small", "base", "large"]).default("small"),
  vocab_size: z.number().int().min(300).default(1024),
  context: z.number().int().min(128).default(2048),
  /** Supervised epochs of the warm start (12: v9, the first build to pass issue 32's gates, docs/token-level.md). */
  epochs: z.number().int().min(0).default(12),
  lr: z.number().positive().default(5e-3),
  batch_tokens: z.number().int().min(256).default(4096),
  /** Loss weight of a hinted turn's call: where the model learns to follow a harness's hints. */
  hinted_weight: z.number().min(0).max(100).default(3),
  /** Epochs on the instruction-following corpus alone before the warm start (which then trains on both). */
  instruct_epochs: z.number().int().min(0).max(100).default(3),
  warmStart: WarmStartOptions.default(WarmStartOptions.parse({})),
  instruct: InstructOptions.default(InstructOptions.parse({})),
});
export type SuiteLmRecipe = z.infer<typeof SuiteLmRecipe>;
