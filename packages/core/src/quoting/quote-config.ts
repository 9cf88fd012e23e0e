import type { QuoteConfiguration } from "../billing/quote-schema.ts";
import { envName, type ExperimentEnv } from "../experiment/environment.ts";
import { QUOTED_FIELDS } from "./quote-fit.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";

/**
 * An environment's figures before any run of it finished here: tasks per evaluation split, and its episodes' tokens at
 * a language model.
 */
interface EnvDefaults {
  evalTasks: { train: number; heldout: number };
  /**
   * A run naming no model runs the environment's own in-process policy (the embedded suite's): no tokens at the
   * endpoint.
   */
  ownPolicyByDefault?: boolean;
  sampledTokensPerRollout: number;
  /** Of them, the completion tokens the model generates: what its device time goes with. */
  generatedTokensPerRollout: number;
  trainedTokensPerTrainingRollout: number;
}

/**
 * The declared figures per environment (a registry; a name not in it gets `openenv`'s): estimates
 * a deployment's first finished run of a configuration replaces. Tasks per split: the embedded
 * suite's evaluation sets, rough sizes for the others (a request's `evalTasks` caps them). Tokens
 * per rollout: a language-model family's episodes are longer than the embedded suite's (with the
 * tiny worker model, 24 tokens a turn at most, a one-step run of two arms measured about 2,150
 * tokens sampled per rollout on DBBench (`scripts/quote-vs-billed.ts`: 64,963 in 30 rollouts, 10,576 of them generated)
 * and 1,700 on AppWorld's fixtures, and on `env-serve --env embedded` as a caller's server with H0's default budget of
 * 10 turns 1,434 (216 generated: its evolution first, 100 rollouts; an H0 of 3 turns samples a third of it); a real
 * model's episodes differ, and a caller's tokens go with its H0's turn budget). Generated tokens where not measured: 15%
 * of those sampled, DBBench's share.
 */
export const ENV_QUOTE_DEFAULTS: Readonly<Record<string, EnvDefaults>> = {
  embedded: {
    evalTasks: { train: 93, heldout: 81 },
    ownPolicyByDefault: true,
    sampledTokensPerRollout: 450,
    generatedTokensPerRollout: 70,
    trainedTokensPerTrainingRollout: 450,
  },
  dbbench: {
    evalTasks: { train: 200, heldout: 100 },
    sampledTokensPerRollout: 2_200,
    generatedTokensPerRollout: 350,
    trainedTokensPerTrainingRollout: 1_400,
  },
  appworld: {
    evalTasks: { train: 20, heldout: 10 },
    sampledTokensPerRollout: 1_700,
    generatedTokensPerRollout: 250,
    trainedTokensPerTrainingRollout: 2_500,
  },
  "swe-gym": {
    evalTasks: { train: 10, heldout: 5 },
    sampledTokensPerRollout: 3_000,
    generatedTokensPerRollout: 450,
    trainedTokensPerTrainingRollout: 3_000,
  },
  openenv: {
    evalTasks: { train: 50, heldout: 50 },
    sampledTokensPerRollout: 1_450,
    generatedTokensPerRollout: 220,
    trainedTokensPerTrainingRollout: 1_450,
  },
};
/**
 * GPU seconds per generated token before a model's first finished run, when the served model declares none: a model's
 * device time goes with the tokens it decodes (on the tiny model, 1.69 ms a generated token on DBBench and 1.24 ms on
 * a caller's embedded server, against 0.28 and 0.09 ms a sampled token: `scripts/quote-vs-billed.ts`), the prompts it
 * prefills and the updates riding on them. One A10G-class device, batched: 3e-4 s (the earlier 5e-5 s a sampled
 * token at DBBench's 15% generated).
 */
export const DEFAULT_GPU_SECONDS_PER_TOKEN = 3e-4;
/**
 * The memory of the function that waits on the policy for a rollout (the stacks' 1,024 MB): before a configuration's
 * first finished run, each of its rollouts at a model is priced as holding a function, and the service's compute, for
 * at least its GPU seconds (it waits on every turn the model samples).
 */
export const WAITING_FUNCTION_GB = 1;
/**
 * How long a pool evolution waits on the caller's policy for one turn, as its quote prices it (the caller's endpoint is
 * the caller's: nothing here measures it before it answers): a small model on one device. The tiny worker model on the
 * 2-core machine answered in 81 ms a turn (`scripts/quote-vs-billed.ts`: 40 turns in 3,227 ms).
 */
export const CALLER_TURN_MS = 100;

/** The model a request names, or `default` (the deployment's first served model, or a family's own policy). */
export const quotedModel = (model: string | undefined): string => model ?? "default";

/** Where a configuration's and a model's finished runs are summed (`#quote` keys are nobody's to pay). */
export const quoteConfigKeys = (env: string, model: string) => {
  const c = `${env}|${model}`;
  return {
    /** The runs' usage, `requests` counting them. */
    usage: `#quote-config#${c}`,
    /** Their training rollouts (every arm's), as `rollouts`. */
    training: `#quote-config-training#${c}`,
    /** Their rescuing arms' training rollouts and extra (rescue, resample, re-anchor) rollouts, as `rollouts`. */
    rescueTraining: `#quote-config-rescue-training#${c}`,
    rescueExtra: `#quote-config-rescue-extra#${c}`,
    /** The model's GPU seconds and tokens (generated ones apart), over every environment. */
    model: `#quote-model#${model}`,
  };
};

/** What a finished run adds to its configuration's rows: its usage, training rollouts and rescue rollouts. */
export async function addJobToConfiguration(
  meter: Pick<UsageMeter, "add">,
  plan: { env: ExperimentEnv; model?: string | undefined },
  used: Usage,
  rollouts: { training: number; rescueTraining: number; rescueExtra: number },
): Promise<void> {
  const keys = quoteConfigKeys(envName(plan.env), quotedModel(plan.model));
  await Promise.all([
    meter.add(keys.usage, { ...used, requests: 1 }),
    meter.add(keys.training, { rollouts: rollouts.training }),
    meter.add(keys.rescueTraining, { rollouts: rollouts.rescueTraining }),
    meter.add(keys.rescueExtra, { rollouts: rollouts.rescueExtra }),
    meter.add(keys.model, {
      gpuSeconds: used.gpuSeconds,
      sampledTokens: used.sampledTokens,
      trainedTokens: used.trainedTokens,
      generatedTokens: used.generatedTokens,
      requests: 1,
    }),
  ]);
}

/**
 * A configuration's basis as its rows give it: `perRollout` (and the rescue share) only once one of its runs finished.
 */
export interface ConfigurationBasis {
  configuration: QuoteConfiguration;
  evalTasks: { train: number; heldout: number };
  perRollout?: Record<string, number>;
  rescueShare?: number;
}

/** Tasks per evaluation split: a caller's, counted from its posted tasks; a family's, as declared. */
function evalTasksOf(env: ExperimentEnv, defaults: EnvDefaults): { train: number; heldout: number } {
  if (typeof env === "string") return defaults.evalTasks;
  return {
    train: env.tasks.filter((t) => t.split === "train").length,
    heldout: env.tasks.filter((t) => t.split === "held-out").length,
  };
}

/**
 * The model's GPU seconds per token: per generated token, measured over its finished runs here (any environment),
 * else as the served model declares it, else the default; rows recorded before generated tokens were metered give a
 * rate per sampled and trained token (`gpuPer`).
 */
function gpuRate(byModel: Usage, declared: number | undefined) {
  const generated = { gpuPer: "generated" as const };
  if (byModel.requests > 0 && byModel.generatedTokens > 0)
    return {
      ...generated,
      gpuSecondsPerToken: byModel.gpuSeconds / byModel.generatedTokens,
      gpuSource: "measured" as const,
    };
  const older = byModel.sampledTokens + byModel.trainedTokens;
  if (byModel.requests > 0 && older > 0)
    return {
      gpuPer: "sampledAndTrained" as const,
      gpuSecondsPerToken: byModel.gpuSeconds / older,
      gpuSource: "measured" as const,
    };
  return declared !== undefined
    ? { ...generated, gpuSecondsPerToken: declared, gpuSource: "declared" as const }
    : { ...generated, gpuSecondsPerToken: DEFAULT_GPU_SECONDS_PER_TOKEN, gpuSource: "defaults" as const };
}

/** This deployment's basis for quoting `plan`'s configuration ({@link ConfigurationBasis}). */
export async function configurationBasis(
  meter: Pick<UsageMeter, "get">,
  plan: { env: ExperimentEnv; model?: string | undefined },
  declaredSecondsPerToken?: number,
): Promise<ConfigurationBasis> {
  const env = envName(plan.env);
  const model = quotedModel(plan.model);
  const keys = quoteConfigKeys(env, model);
  const [used, training, rescueTraining, rescueExtra, byModel] = await Promise.all(
    [keys.usage, keys.training, keys.rescueTraining, keys.rescueExtra, keys.model].map((k) => meter.get(k)),
  );
  const defaults = ENV_QUOTE_DEFAULTS[env] ?? ENV_QUOTE_DEFAULTS.openenv!;
  const gpu = gpuRate(byModel!, declaredSecondsPerToken);
  const evalTasks = evalTasksOf(plan.env, defaults);
  if (!used || used.requests === 0 || used.rollouts === 0) {
    const configuration = { env, model, source: "defaults" as const, jobs: 0, ...gpu };
    const own = defaults.ownPolicyByDefault === true && plan.model === undefined;
    const tokens = own
      ? { sampledTokensPerRollout: 0, generatedTokensPerRollout: 0, trainedTokensPerTrainingRollout: 0 }
      : {
          sampledTokensPerRollout: defaults.sampledTokensPerRollout,
          generatedTokensPerRollout: defaults.generatedTokensPerRollout,
          trainedTokensPerTrainingRollout: defaults.trainedTokensPerTrainingRollout,
        };
    return { evalTasks, configuration: { ...configuration, ...tokens } };
  }
  const perRollout = Object.fromEntries(QUOTED_FIELDS.map((f) => [f, used[f] / used.rollouts]));
  const configuration = {
    env,
    model,
    source: "measured" as const,
    jobs: used.requests,
    sampledTokensPerRollout: used.sampledTokens / used.rollouts,
    generatedTokensPerRollout: used.generatedTokens / used.rollouts,
    trainedTokensPerTrainingRollout: training!.rollouts > 0 ? used.trainedTokens / training!.rollouts : 0,
    ...gpu,
  };
  return {
    evalTasks,
    configuration,
    perRollout,
    ...(rescueTraining!.rollouts > 0 ? { rescueShare: rescueExtra!.rollouts / rescueTraining!.rollouts } : {}),
  };
}
