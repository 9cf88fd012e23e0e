import { z } from "zod";
import { armDefinition, runOrder } from "../experiment/arms.ts";
import { TrainConfig } from "../training/config.ts";
import { chargeUsd, costOfGoods, type PriceList, type Prices } from "../billing/cost-of-goods.ts";
import { ExperimentRequest, type ExperimentPlan } from "../experiment/records.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";
import { QUOTED_FIELDS, readFit, solveFit, type QuoteFit } from "./quote-fit.ts";
import {
  Quote,
  type QuoteBasis,
  type QuoteCaps,
  type QuoteConfiguration,
  type QuotePath,
} from "../billing/quote-schema.ts";
import { RescueRequest, rescueRollouts } from "../rescue/rescue-request.ts";
import { PoolEvolveRequest, firstEvolutionRollouts, plannedEvolutionRollouts } from "../pools/evolve-request.ts";
import { firstEvolutionTasks } from "../experiment/environment.ts";
import { CALLER_TURN_MS, WAITING_FUNCTION_GB, type ConfigurationBasis } from "./quote-config.ts";

/**
 * The defaults, measured on the embedded suite with the local stack (DynamoDB Local, fauxqs,
 * 1,024 MB per function, 2026-12-03): rescue share and evaluation sets from in-process runs of
 * seed 5; usage per rollout from one queued run (2 arms, 2,187 rollouts: tests/integration/cost-of-goods.test.ts
 * printed it while it evaluated every task; read units again on 2026-12-04, once an experiment's rollouts stopped
 * reading the rescue-job
 * table: 5,710 → 3,553 units; write units again on 2026-12-05, once a rollout of one chunk is one
 * conditional put instead of a transaction: 1,686 → 934 units for a run of 738 rollouts, 1.3 per
 * rollout). A deployment's own finished runs replace `perRollout`, `perExtraRollout` and the rescue share ({@link
 * basisFrom}).
 */
export const DEFAULT_QUOTE_BASIS: QuoteBasis = {
  source: "defaults",
  jobs: 0,
  rescueShare: 0.45,
  evalTasks: { train: 93, heldout: 81 },
  perRollout: {
    computeMs: 12.7,
    lambdaGbSeconds: 0.031,
    dynamoReadUnits: 1.6,
    dynamoWriteUnits: 1.3,
    sqsRequests: 0.33,
    gpuSeconds: 0,
  },
};

/**
 * Where finished experiments' usage is summed for the measured basis (`requests` counts the jobs; `#` is never in a
 * key's id).
 */
export const QUOTE_BASIS_KEY = "#quote-basis";
/**
 * Where finished jobs' arms that rescue (or resample) count, as `rollouts`, their training
 * rollouts and the rescue, resample and re-anchor rollouts beyond them: the measured rescue share.
 */
export const QUOTE_RESCUE_KEYS = { training: "#quote-rescue-training", extra: "#quote-rescue-extra" } as const;

/** Training rollouts of a job's arms that rescue or resample, and what they ran beyond them. */
export function rescueRolloutsOf(
  results: readonly {
    arm: string;
    result: { rolloutBreakdown: { train: number; rescue: number; resample: number; reanchor: number } };
  }[],
) {
  const rescuing = results.filter((r) => armDefinition(r.arm).rescue !== "none").map((r) => r.result.rolloutBreakdown);
  return {
    training: rescuing.reduce((n, b) => n + b.train, 0),
    extra: rescuing.reduce((n, b) => n + b.rescue + b.resample + b.reanchor, 0),
  };
}

/** Every arm's training rollouts in a job's results. */
export const trainingRolloutsOf = (results: readonly { result: { rolloutBreakdown: { train: number } } }[]): number =>
  results.reduce((n, r) => n + r.result.rolloutBreakdown.train, 0);

/**
 * The basis from the summed usage of finished jobs (`requests` = jobs), or the defaults when none
 * finished; the rescue share is measured too once a finished job had an arm that rescues, and the
 * extra rollouts of such arms get their own usage per rollout once two jobs with different mixes
 * of the two kinds finished ({@link solveFit}; until then both rates are the average).
 */
export function basisFrom(
  summed: Usage | undefined,
  rescue?: { training: number; extra: number },
  fit?: QuoteFit,
): QuoteBasis {
  if (!summed || summed.requests === 0 || summed.rollouts === 0) return DEFAULT_QUOTE_BASIS;
  const average = Object.fromEntries(QUOTED_FIELDS.map((f) => [f, summed[f] / summed.rollouts]));
  const rescueShare = rescue && rescue.training > 0 ? rescue.extra / rescue.training : DEFAULT_QUOTE_BASIS.rescueShare;
  const rates = solveFit(fit, average) ?? { perRollout: average, perExtraRollout: average };
  return { ...DEFAULT_QUOTE_BASIS, source: "measured", jobs: summed.requests, rescueShare, ...rates };
}

/** This deployment's basis, from its meter's quote rows ({@link basisFrom}). */
export async function measuredBasis(meter: Pick<UsageMeter, "get">): Promise<QuoteBasis> {
  const [summed, training, extra, fit] = await Promise.all([
    meter.get(QUOTE_BASIS_KEY),
    meter.get(QUOTE_RESCUE_KEYS.training),
    meter.get(QUOTE_RESCUE_KEYS.extra),
    readFit(meter),
  ]);
  return basisFrom(summed, { training: training.rollouts, extra: extra.rollouts }, fit);
}

/**
 * `POST /v1/quotes`: an experiment request, a rescue request or a pool evolution (`evolve` of `POST /v1/pools`), as
 * they would be posted.
 */
export const QuoteRequest = z.union([
  z.object({ experiment: ExperimentRequest }).strict(),
  z.object({ rescue: RescueRequest }).strict(),
  z.object({ pool: PoolEvolveRequest }).strict(),
]);
export type QuoteRequest = z.infer<typeof QuoteRequest>;
type Plan = Pick<ExperimentPlan, "arms" | "seeds" | "train" | "evalSamples" | "evalTasks" | "budget"> &
  Partial<Pick<ExperimentPlan, "env" | "model">>;
/** What can be quoted: a quote request, or an experiment plan as the operator's own runs give it. */
export type Quotable = QuoteRequest | { experiment: Plan };

/** A stretch of a run's rollouts, and how many of them are an arm's extra (rescue, resample, re-anchor) rollouts. */
interface Stretch {
  rollouts: number;
  extra: number;
  /** How many of them are training rollouts (steps × batch × group of an arm). */
  training: number;
  /** The pool evolution a run on a caller's environment without a pool runs first. */
  evolution?: true;
}

/**
 * The rollouts an experiment will run, in the order it runs them: on a caller's environment that names no pool, the
 * pool evolution first ({@link firstEvolutionRollouts}, the job's own bound); then per seed, the initial
 * evaluation (H0 on both splits and Rank-1 held-out), then each arm (the budget source first,
 * `runOrder`): its training (steps × batch × group, plus the rescue share for an arm that
 * rescues: its `extra` rollouts), its learning-curve points (before training and every
 * `curveEvery` steps, Avg@3 on `curveTasks`) and its final evaluation; each evaluation covers at
 * most `evalTasks` tasks per split.
 */
export function plannedStretches(plan: Plan, basis: QuoteBasis): Stretch[] {
  const t = TrainConfig.parse(plan.train);
  const cap = plan.evalTasks ?? Number.POSITIVE_INFINITY;
  const [train, heldout] = [Math.min(basis.evalTasks.train, cap), Math.min(basis.evalTasks.heldout, cap)];
  const s = plan.evalSamples;
  const training = t.steps * t.batchSize * t.groupSize;
  const arm = (name: string): Stretch => {
    const def = armDefinition(name);
    const extra = def.rescue === "none" ? 0 : training * basis.rescueShare;
    const curve =
      t.curveEvery > 0
        ? (Math.floor(t.steps / t.curveEvery) + 1) * Math.min(t.curveTasks, basis.evalTasks.train) * 3
        : 0;
    return { rollouts: training + extra + curve + (train + heldout + (def.rank1 ? heldout : 0)) * s, extra, training };
  };
  const arms = runOrder(plan.arms).map(arm);
  const devTasks = firstEvolutionTasks(plan.env);
  const evolution: Stretch[] =
    devTasks === undefined
      ? []
      : [{ rollouts: firstEvolutionRollouts(devTasks), extra: 0, training: 0, evolution: true }];
  return [
    ...evolution,
    ...plan.seeds.flatMap(() => [{ rollouts: (train + 2 * heldout) * s, extra: 0, training: 0 }, ...arms]),
  ];
}

const total = (stretches: readonly Stretch[]) => ({
  rollouts: Math.round(stretches.reduce((n, x) => n + x.rollouts, 0)),
  extra: Math.round(stretches.reduce((n, x) => n + x.extra, 0)),
  training: Math.round(stretches.reduce((n, x) => n + x.training, 0)),
});

/** Every rollout an experiment's plan runs to its end ({@link plannedStretches}), no cap applied. */
export const plannedRolloutKinds = (
  plan: Plan,
  basis: QuoteBasis,
): { rollouts: number; extra: number; training: number } => total(plannedStretches(plan, basis));
export const plannedRollouts = (plan: Plan, basis: QuoteBasis): number => plannedRolloutKinds(plan, basis).rollouts;

/**
 * The stretches a run does before a rollout cap stops it (every rollout counts): the stretches before the cap whole,
 * then the first part of the one it falls in, that stretch's extra rollouts pro rata (an arm's rescues come with its
 * training steps).
 */
function stretchesWithinCap(stretches: readonly Stretch[], cap = Number.POSITIVE_INFINITY): Stretch[] {
  let left = cap;
  const done: Stretch[] = [];
  for (const x of stretches) {
    if (left <= 0) break;
    const part = Math.min(1, left / x.rollouts);
    done.push({ ...x, rollouts: x.rollouts * part, extra: x.extra * part, training: x.training * part });
    left -= x.rollouts;
  }
  return done;
}

/**
 * A quote for `rollouts` rollouts, `extra` of them an arm's rescue, resample or re-anchor
 * rollouts, at the basis's usage per rollout of each kind (`priced`: fields priced apart instead; `added`: on top),
 * with cost of goods and the charge.
 */
export function quoteRollouts(
  rollouts: number,
  basis: QuoteBasis,
  prices: { tariff: Prices; priceList: PriceList },
  extra = 0,
  priced: Record<string, number> = {},
  added: Record<string, number> = {},
): Quote {
  const perExtra = basis.perExtraRollout ?? basis.perRollout;
  const fields = new Set([...Object.keys(basis.perRollout), ...Object.keys(perExtra), ...Object.keys(added)]);
  const usage = {
    ...Object.fromEntries(
      [...fields].map((k) => [
        k,
        (basis.perRollout[k] ?? 0) * (rollouts - extra) + (perExtra[k] ?? 0) * extra + (added[k] ?? 0),
      ]),
    ),
    ...priced,
  };
  return Quote.parse({
    rollouts,
    usage: { ...usage, rollouts },
    costOfGoods: costOfGoods(usage, prices.priceList),
    chargeUsd: chargeUsd({ ...usage, rollouts }, prices.tariff),
    basis,
  });
}

/**
 * What an experiment's budget does to its quote: a rollout cap below the plan stops the run there
 * (the quote is for the rollouts up to it); a USD cap below the quoted charge refuses the run
 * (402, before any work), and otherwise stops it should its charge reach the cap.
 */
export function experimentCaps(q: Quote, plannedRollouts: number, budget: Plan["budget"]): QuoteCaps {
  const stops = budget !== undefined && plannedRollouts > budget.rollouts;
  const refused = budget?.usd !== undefined && q.chargeUsd > budget.usd;
  const notes = [
    stops
      ? `the plan runs ${plannedRollouts} rollouts and its budget stops it at ${budget.rollouts}: quoted for those ${budget.rollouts}`
      : `the plan runs ${plannedRollouts} rollouts, within its budget${budget ? `'s cap of ${budget.rollouts}` : " (none set)"}: quoted to its end`,
    ...(budget?.usd === undefined
      ? []
      : [
          refused
            ? `the quoted charge of ${q.chargeUsd} USD is above its budget's ${budget.usd} USD: it is refused (402) before any work`
            : `its budget's ${budget.usd} USD stops it should its charge reach that`,
        ]),
  ];
  return {
    plannedRollouts,
    ...(budget ? { rollouts: budget.rollouts } : {}),
    ...(budget?.usd !== undefined ? { usd: budget.usd } : {}),
    binding: [...(stops ? ["rollouts" as const] : []), ...(refused ? ["usd" as const] : [])],
    note: notes.join("; "),
  };
}

/**
 * A caller rescue's own budget (tokens, environment time) may stop its slots before all of them ran: the quote is its
 * most.
 */
function rescueCaps(rollouts: number, budget: NonNullable<RescueRequest["caller"]>["budget"]): QuoteCaps | undefined {
  if (!budget) return undefined;
  const limits = [
    budget.policyTokens && `${budget.policyTokens} policy tokens`,
    budget.environmentSeconds && `${budget.environmentSeconds} s in the environment`,
  ].filter(Boolean);
  return {
    plannedRollouts: rollouts,
    binding: [],
    note: `at most ${rollouts} rollouts: its budget (${limits.join(", ")}) stops its slots once spent, which this quote does not price`,
  };
}

/**
 * An evolution's rollouts are at most its plan (H0's measurement and every candidate's) within its
 * cap; what it samples at the caller's policy and waits in the caller's environment is metered
 * (`policyTokens`, `environmentMs`), not priced here.
 */
function evolutionCaps(req: PoolEvolveRequest, chargeUsd: number): QuoteCaps {
  const e = req.evolution;
  const refused = req.budget !== undefined && chargeUsd > req.budget.usd;
  const full = req.devTasks.length * e.trials * (1 + e.directions.length * e.rounds * e.candidatesPerRound);
  return {
    plannedRollouts: full,
    rollouts: e.maxRollouts,
    ...(req.budget ? { usd: req.budget.usd } : {}),
    binding: [...(full > e.maxRollouts ? ["rollouts" as const] : []), ...(refused ? ["usd" as const] : [])],
    note: `at most ${Math.min(full, e.maxRollouts)} rollouts (${req.devTasks.length} dev tasks × ${e.trials} trials for H0 and each of up to ${e.directions.length * e.rounds * e.candidatesPerRound} candidates${full > e.maxRollouts ? `, stopped at the cap of ${e.maxRollouts}` : ""}); proposals refused or screened out cost none; tokens at your policy and time in your environment are metered, not priced here`,
  };
}

/**
 * The basis of an experiment's configuration (its environment and model): its evaluation sets,
 * and once one of its runs finished here its rescue share and usage per rollout (else the deployment's).
 */
export function withConfiguration(basis: QuoteBasis, config: ConfigurationBasis): QuoteBasis {
  return {
    ...basis,
    evalTasks: config.evalTasks,
    ...(config.rescueShare !== undefined ? { rescueShare: config.rescueShare } : {}),
    ...(config.perRollout ? { perRollout: config.perRollout, perExtraRollout: config.perRollout } : {}),
    configuration: config.configuration,
  };
}

/**
 * Tokens a run's rollouts sample and its training rollouts train on, at its configuration's rates, and the model's GPU
 * seconds for them.
 */
export function configuredTokens(
  run: { rollouts: number; training: number },
  c: QuoteConfiguration,
): Record<string, number> {
  const sampledTokens = Math.round(run.rollouts * c.sampledTokensPerRollout);
  const generatedTokens = Math.round(run.rollouts * c.generatedTokensPerRollout);
  const trainedTokens = Math.round(run.training * c.trainedTokensPerTrainingRollout);
  const priced = c.gpuPer === "generated" ? generatedTokens : sampledTokens + trainedTokens;
  return { sampledTokens, generatedTokens, trainedTokens, gpuSeconds: priced * c.gpuSecondsPerToken };
}

/**
 * Before a configuration's first finished run, its per-rollout usage is the deployment's (the embedded suite's
 * rollouts, which wait on no model): each rollout at a model also holds a waiting function and the service's compute
 * for at least its GPU seconds ({@link WAITING_FUNCTION_GB}). Once the configuration's runs are measured, that wait is
 * in their usage per rollout, and nothing is added.
 */
export function modelWait(gpuSeconds: number, c: QuoteConfiguration): Record<string, number> {
  return c.source === "measured" ? {} : heldFor(gpuSeconds);
}

/**
 * A function ({@link WAITING_FUNCTION_GB}) and the service's compute held for `seconds` while something else works: a
 * model sampling, a caller's policy answering.
 */
const heldFor = (seconds: number): Record<string, number> =>
  seconds === 0 ? {} : { computeMs: seconds * 1000, lambdaGbSeconds: seconds * WAITING_FUNCTION_GB };

/**
 * The usage of rollouts the coordinator runs in process (an experiment's evolution first): no store or queue request
 * of their own, its function and compute held while the model samples ({@link heldFor}, whatever was measured).
 */
const IN_PROCESS_ROLLOUT: Record<string, number> = {};

/**
 * A quote of a run's stretches (within its cap): the dispatched ones at the basis's usage per rollout, the evolution
 * first's as in-process rollouts, each with its tokens and GPU seconds at the configuration's rates.
 */
function quoteStretches(
  done: readonly Stretch[],
  basis: QuoteBasis,
  prices: { tariff: Prices; priceList: PriceList },
  config: ConfigurationBasis | undefined,
): Quote {
  const part = (stretches: readonly Stretch[], inProcess: boolean) => {
    const run = total(stretches);
    const tokens = config ? configuredTokens(run, config.configuration) : {};
    // An in-process rollout's wait is in no measured usage per rollout: always added.
    const gpu = tokens.gpuSeconds ?? 0;
    const wait = !config ? {} : inProcess ? heldFor(gpu) : modelWait(gpu, config.configuration);
    const at = inProcess ? { ...basis, perRollout: IN_PROCESS_ROLLOUT, perExtraRollout: IN_PROCESS_ROLLOUT } : basis;
    return quoteRollouts(run.rollouts, at, prices, run.extra, tokens, wait).usage;
  };
  const evolution = done.filter((x) => x.evolution);
  const usage = sumUsage(
    part(evolution, true),
    part(
      done.filter((x) => !x.evolution),
      false,
    ),
  );
  return Quote.parse({
    rollouts: usage.rollouts,
    usage,
    costOfGoods: costOfGoods(usage, prices.priceList),
    chargeUsd: chargeUsd(usage, prices.tariff),
    basis,
  });
}

/**
 * What a pool evolution's turns at the caller's policy hold of the service's compute and its function before anything
 * is measured: {@link CALLER_TURN_MS} each (H0's turn budget per rollout, its most).
 */
const callerWait = (turns: number): Record<string, number> => heldFor((turns * CALLER_TURN_MS) / 1000);

/** Two usages' fields added. */
const sumUsage = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries([...new Set([...Object.keys(a), ...Object.keys(b)])].map((k) => [k, (a[k] ?? 0) + (b[k] ?? 0)]));

/** The path of a run whose first evolution keeps no sibling: it fails there, billed for the evolution alone. */
const evolutionFailsPath = (q: Quote): QuotePath => ({
  name: "the pool evolution it runs first keeps no sibling",
  failsWith: "EVOLUTION_FAILED",
  rollouts: q.rollouts,
  chargeUsd: q.chargeUsd,
  note: `the run evolves a pool on its dev split first (at most ${q.rollouts} rollouts); should no sibling repair a dev task H0 fails, it fails there, billed for those rollouts alone`,
});

/** What an experiment's figures rest on, in words. */
function basisNote(basis: QuoteBasis): string {
  const c = basis.configuration;
  if (c?.source === "measured")
    return `measured on ${c.jobs} finished run(s) of ${c.env} with ${c.model} here (GPU seconds per token: ${c.gpuSource})`;
  return basis.source === "measured"
    ? `usage per rollout measured on ${basis.jobs} finished run(s) here; ${c ? `${c.env}'s tokens per rollout are declared defaults until a run of it with ${c.model} finishes` : ""}`
    : 'no run has finished here: every figure is a declared default, and the charge may come out about 20% either side of it (docs/operations.md, "Quote against what is billed"); once a run of this configuration finishes, quotes rest on it';
}

/**
 * What a quote request would cost: an experiment's rollouts up to its budget's rollout cap (and
 * what its caps do, `caps`), with `config` its environment's and model's tokens and GPU seconds;
 * or a rescue's k × rollouts per harness.
 */
export function quote(
  req: Quotable,
  measured: QuoteBasis,
  prices: { tariff: Prices; priceList: PriceList },
  config?: ConfigurationBasis,
): Quote {
  if ("experiment" in req) {
    const basis = config ? withConfiguration(measured, config) : measured;
    const stretches = plannedStretches(req.experiment, basis);
    const cap = req.experiment.budget?.rollouts;
    const priced = (part: readonly Stretch[]) => quoteStretches(stretchesWithinCap(part, cap), basis, prices, config);
    const q = priced(stretches);
    const evolution = stretches.filter((x) => x.evolution);
    const paths = evolution.length > 0 ? [evolutionFailsPath(priced(evolution))] : [];
    return Quote.parse({
      ...q,
      caps: experimentCaps(q, total(stretches).rollouts, req.experiment.budget),
      ...(paths.length > 0 ? { paths } : {}),
      note: basisNote(basis),
    });
  }
  const basis = measured;
  if ("pool" in req) {
    const rollouts = plannedEvolutionRollouts(req.pool);
    const inProcess = { ...basis, perRollout: IN_PROCESS_ROLLOUT, perExtraRollout: IN_PROCESS_ROLLOUT };
    const q = quoteRollouts(rollouts, inProcess, prices, 0, {}, callerWait(rollouts * req.pool.maxTurns));
    return Quote.parse({ ...q, caps: evolutionCaps(req.pool, q.chargeUsd) });
  }
  const rollouts = rescueRollouts(req.rescue);
  const caps = rescueCaps(rollouts, req.rescue.caller?.budget);
  return caps
    ? Quote.parse({ ...quoteRollouts(rollouts, basis, prices), caps })
    : quoteRollouts(rollouts, basis, prices);
}
