import { z } from "zod";
import { ArmList, armNames, defaultArmNames } from "@harness-s/core/experiment";
import { EvolutionConfig } from "@harness-s/core/evolution";
import { defaultEmbeddedSettings, familyFlags } from "@harness-s/envs";
import { declareCommand, flag } from "../declare.ts";
import { envFlagOr, familyNames, familySummaries, registeredFamily } from "../families.ts";
import { int, jsonFlag, num, probability, seeds, TrainOverrides, url } from "../flags.ts";
import { SuiteLmRecipe } from "../suite-lm/recipe.ts";
import { EXPERIMENT_PRESETS } from "./experiment-presets.ts";
import { SWEEPS, timestamped } from "./shared.ts";

const sweepKinds = z
  .union([z.literal(true), z.string()])
  .transform((v) => (v === true ? ["cue"] : v.split(",").map((s) => s.trim())))
  .pipe(
    z.array(
      z.enum(SWEEPS, { error: (i) => `unknown sweep ${JSON.stringify(i.input)} (choose from ${SWEEPS.join(", ")})` }),
    ),
  );
const positive = num((n) => n.positive());
const seedsText = (s: readonly number[]) => `${s[0]}-${s.at(-1)}`;

export const ExperimentFlags = z
  .strictObject({
    seeds: flag(
      seeds.optional(),
      "<list>",
      `seeds: comma-separated integers and ranges, e.g. 1,2,3 or 1-25 (default: ${seedsText(EXPERIMENT_PRESETS.full.seeds)}, or ${seedsText(EXPERIMENT_PRESETS.quick.seeds)} with --quick)`,
    ),
    arms: flag(
      z
        .string()
        .transform((v) => v.split(",").map((s) => s.trim()))
        .pipe(ArmList)
        .optional(),
      "<list>",
      `arms to run, comma-separated (default: ${defaultArmNames().join(", ")}; also: ${armNames()
        .filter((a) => !defaultArmNames().includes(a))
        .join(", ")})`,
    ),
    out: flag(z.string().min(1).optional(), "<dir>", "output folder (default results/<timestamp>)"),
    quick: flag(z.boolean().default(false), null, "a smoke run: 3 seeds, 10 steps, fewer evaluation samples"),
    sweep: flag(
      sweepKinds.optional(),
      "[kinds]",
      "also run sweeps: cue (the default: harness-s − grpo-budget over H0 cue rate and cue strength), router (harness-s − harness-s-random over pool size, k and side effects), reanchor (harness-s − harness-s-noreanchor as hints fade); comma-separated",
    ),
    sideEffects: flag(
      probability.optional(),
      "<p>",
      "how often a sibling's edit misleads outside its area: per task and absent requirement, the chance its remedy spoils the episode (0: never)",
    ),
    cueHalfLife: flag(
      positive.optional(),
      "<steps>",
      "updates over which the policy's hint bonus halves (default: fixed)",
    ),
    poolSize: flag(
      int(1, 64).optional(),
      "<n>",
      `siblings evolution keeps (default ${EvolutionConfig.parse({}).poolSize})`,
    ),
    steps: flag(int(1, 100_000).optional(), "<n>", "training steps per arm"),
    train: flag(
      jsonFlag(TrainOverrides).optional(),
      "<json>",
      'overrides of the training config as JSON, e.g. \'{"k":3,"batchSize":24}\'',
    ),
    cueRate: flag(
      probability.default(defaultEmbeddedSettings.cueRate),
      "<r>",
      "share of train tasks whose instruction cues their latent requirements",
    ),
    cueStrength: flag(
      num((n) => n.min(0)).default(defaultEmbeddedSettings.cueStrength),
      "<b>",
      "the policy's fixed logit bonus for a hinted action",
    ),
    fixedSuite: flag(
      z.boolean().default(false),
      null,
      "run every seed on one suite instance and pool (default: each seed is an independent replicate)",
    ),
    protocol: flag(
      z.enum(["test", "validation"]).default("test"),
      "<p>",
      "test: evaluate on the held-out split; validation: hold the train pair a+b back and evaluate on it instead (for tuning; no held-out task is built)",
    ),
    resume: flag(
      z.boolean().default(false),
      null,
      "continue the run in --out from its checkpoint.json (finished seeds and arms are not run again)",
    ),
    runtime: flag(
      z.enum(["in-process", "local-aws"]).default("in-process"),
      "<r>",
      "in-process, or local-aws: through DynamoDB Local, fauxqs and the same Lambda handlers (same summary for the same seeds)",
    ),
    ...workerFlags(),
    evalTasks: flag(
      int(1).optional(),
      "<n>",
      "evaluate at most n tasks per split (evenly spaced): for slow policies; default every task",
    ),
    evalSamples: flag(
      int(3, 1000).optional(),
      "<n>",
      "attempts per task in every evaluation (default 6, or 3 with --quick)",
    ),
    profileBudget: flag(
      int(0).optional(),
      "<n>",
      "with --policy worker: rollouts per seed for measuring the pool's initial profiles with the token policy (default: every dev task under H0, and every sibling where H0 fails)",
    ),
    voters: flag(
      z.string().min(1).optional(),
      "<file>",
      "a voter panel (JSON: statistical and OpenAI-compatible LLM voters, weights, quorum) the router arms decide with; default the statistical voters",
    ),
    env: envFlagOr(
      "experiment",
      "embedded",
      `the environment: ${familySummaries("experiment")}; ${familyNames("experiment")
        .filter((n) => registeredFamily(n)?.policy === "worker")
        .join(", ")} need --policy worker`,
    ),
    ...familyFlags("experiment"),
  })
  .refine((o) => o.policy === "worker" || o.policyModel === "tiny", {
    path: ["policyModel"],
    message: "--policy-model needs --policy worker",
  })
  .superRefine((o, ctx) => {
    const family = registeredFamily(o.env);
    if (family?.policy === "worker" && o.policy !== "worker")
      ctx.addIssue({
        code: "custom",
        path: ["env"],
        message: `--env ${o.env} trains a language model: it needs --policy worker`,
      });
    if (family && !family.sweepsAndLocalAws && (o.runtime !== "in-process" || o.sweep))
      ctx.addIssue({ code: "custom", path: ["env"], message: `--env ${o.env} runs in process, without sweeps` });
  })
  .refine((o) => !o.resume || o.out, { path: ["resume"], message: "--resume needs --out DIR (the run to continue)" });
export type ExperimentFlags = z.infer<typeof ExperimentFlags>;

/** The flags of a language-model policy at a protocol-v2 worker. */
function workerFlags() {
  return {
    policy: flag(
      z.enum(["embedded", "worker"]).default("embedded"),
      "<p>",
      "embedded (the log-linear CPU policy), or worker: an LLM at a protocol-v2 policy worker (--policy-url) on the suite's text rendering",
    ),
    policyUrl: flag(
      url.optional(),
      "<url>",
      "the policy worker (see `harness-s policy-worker`); without it, one is started here on <out>/worker with --policy-model",
    ),
    policyToken: flag(z.string().min(1).optional(), "<t>", "the worker's bearer token"),
    policyModel: flag(
      z.string().min(1).default("tiny"),
      "<name>",
      "what the worker serves: tiny (random weights, for smoke runs), suite-lm (the suite LM, built or found in --model-cache), or a model directory; with --policy-url, the name it serves",
    ),
    suiteLmSize: flag(SuiteLmRecipe.shape.size, "<s>", "the suite LM's size (see `harness-s suite-lm build`)"),
    modelCache: flag(
      z.string().min(1).default(".harness-s/models"),
      "<dir>",
      "where suite LMs are kept, by recipe hash",
    ),
    policyLr: flag(
      positive.default(3e-3),
      "<lr>",
      "AdamW learning rate of the worker's LoRA adapters (3e-3: the suite LM learns without collapsing, docs/token-level.md)",
    ),
    policyMaxTokens: flag(int(1, 32_768).default(24), "<n>", "most tokens the worker samples per turn"),
    constrainedCalls: flag(
      z.boolean().optional(),
      null,
      "with --policy worker: each turn is sampled (and trained) as exactly one call of an offered tool, its arguments fitting the tool's schema",
    ),
    policyMaxInFlight: flag(
      int(1, 4096).default(32),
      "<n>",
      "most samples the worker is sent concurrently; the rest wait in the client, so none times out queued",
    ),
  };
}

export const experiment = declareCommand({
  name: "experiment",
  summary: "Train every arm over several seeds on the embedded suite; write summary.json, report.md and plots",
  flags: ExperimentFlags,
  run: async (o) => (await import("../commands/experiment.ts")).experimentCommand(experimentOptions(o)),
});

/** What the experiment runs, from its flags. */
function experimentOptions(o: ExperimentFlags) {
  const out = o.out ?? timestamped("results/");
  const worker =
    o.policy === "worker"
      ? {
          url: o.policyUrl ?? "",
          token: o.policyToken,
          model: o.policyModel,
          learningRate: o.policyLr,
          maxTokens: o.policyMaxTokens,
          maxInFlight: o.policyMaxInFlight,
          constrainToolCalls: o.constrainedCalls,
        }
      : undefined;
  const startWorker =
    o.policy === "worker" && !o.policyUrl
      ? { model: o.policyModel, recipe: SuiteLmRecipe.parse({ size: o.suiteLmSize }), cacheDir: o.modelCache }
      : undefined;
  return {
    ...o,
    out,
    worker,
    startWorker,
    seeds: o.seeds ?? [...(o.quick ? EXPERIMENT_PRESETS.quick : EXPERIMENT_PRESETS.full).seeds],
    sweeps: o.sweep ?? [],
    familyOptions: o,
  };
}
