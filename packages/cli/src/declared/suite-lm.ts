import { z } from "zod";
import { declareCommand, flag } from "../declare.ts";
import { int, num, seeds } from "../flags.ts";
import { SuiteLmRecipe } from "../suite-lm/recipe.ts";

const recipeDefaults = SuiteLmRecipe.parse({});

/** The recipe's flags (`build` and `compare`); their defaults are the recipe's own. */
const RecipeFlags = z.strictObject({
  size: flag(
    SuiteLmRecipe.shape.size,
    "<s>",
    "model size (toy ≈ 75k, small ≈ 1.1M, base ≈ 5.6M, large ≈ 28M parameters with 1,024 token ids)",
  ),
  modelSeed: flag(int(0).default(recipeDefaults.seed), "<n>", "the model's initial weights and data order"),
  epochs: flag(int(0, 1000).default(recipeDefaults.epochs), "<n>", "supervised epochs of the warm start"),
  warmStartSeeds: flag(
    seeds.prefault(recipeDefaults.warmStart.suiteSeeds.join(",")),
    "<list>",
    "suite instances whose train and dev episodes the warm start imitates (never an experiment's seeds)",
  ),
  h0Samples: flag(
    int(0, 1000).default(recipeDefaults.warmStart.h0Samples),
    "<n>",
    "episodes per imitated task under H0 in the warm start",
  ),
  instruct: flag(
    int(0, 100_000).default(recipeDefaults.instruct.conversations),
    "<n>",
    "conversations of the instruction-following corpus (generated worlds, no suite task)",
  ),
  instructInvented: flag(
    num((n) => n.min(0).max(1)).default(recipeDefaults.instruct.invented),
    "<share>",
    "share of the corpus's tool names that are invented words rather than the suite's names in random roles",
  ),
  instructEpochs: flag(
    int(0, 100).default(recipeDefaults.instruct_epochs),
    "<n>",
    "epochs on the instruction-following corpus alone before the warm start",
  ),
  cacheDir: flag(
    z.string().min(1).default(".harness-s/models"),
    "<dir>",
    "where built models are kept, by recipe hash",
  ),
});
type RecipeFlags = z.infer<typeof RecipeFlags>;

const recipeOf = (o: RecipeFlags) =>
  SuiteLmRecipe.parse({
    size: o.size,
    seed: o.modelSeed,
    epochs: o.epochs,
    instruct_epochs: o.instructEpochs,
    warmStart: { suiteSeeds: o.warmStartSeeds, h0Samples: o.h0Samples },
    instruct: { conversations: o.instruct, invented: o.instructInvented },
  });

export const suiteLmBuild = declareCommand({
  name: "suite-lm build",
  summary: "Build the suite LM (or find it in the cache) and print its record",
  flags: RecipeFlags,
  run: async (o) => (await import("../commands/suite-lm.ts")).suiteLmBuildCommand(recipeOf(o), o.cacheDir),
});

export const suiteLmCompare = declareCommand({
  name: "suite-lm compare",
  summary: "Embedded initial policy vs suite LM before training: H0 on train and held-out, each sibling relative to H0",
  flags: RecipeFlags.extend({
    seeds: flag(seeds.prefault("101-103"), "<list>", "suite instances (and pools) to compare on"),
    tasks: flag(int(1).default(24), "<n>", "tasks per split (evenly spaced)"),
    samples: flag(int(3, 1000).default(3), "<n>", "attempts per task"),
    maxTokens: flag(int(1, 4096).default(24), "<n>", "most tokens per turn"),
    constrainedCalls: flag(
      z.boolean().default(false),
      null,
      "the token model samples each turn as exactly one call of an offered tool",
    ),
    modelDir: flag(
      z.string().min(1).optional(),
      "<dir>",
      "compare this built model folder (a block's committed model, an earlier build) instead of the recipe's",
    ),
    out: flag(z.string().min(1).default("results/suite-lm-start"), "<dir>", "output folder"),
  }),
  run: async ({ constrainedCalls, modelDir, ...o }) =>
    (await import("../commands/suite-lm.ts")).suiteLmCompareCommand({
      ...o,
      recipe: recipeOf(o),
      constrainToolCalls: constrainedCalls,
      ...(modelDir ? { modelDir } : {}),
    }),
});
