import { z } from "zod";
import { armDefinition } from "../experiment/arms.ts";
import { TrainConfig } from "../training/config.ts";
import { chargeUsd, costOfGoods, COST_FIELDS, type PriceList, type Prices } from "./cost-of-goods.ts";
import { ExperimentRequest, type ExperimentPlan } from "./experiment-records.ts";
import type { Usage, UsageMeter } from "./ports.ts";
import { Quote, type QuoteBasis } from "./quote-schema.ts";
import { RescueRequest } from "./rescue-jobs.ts";

/**
 * The defaults, measured on the embedded suite with the local stack (DynamoDB Local, fauxqs,
 * 1,024 MB per function, 2026-12-03): rescue share and evaluation sets from in-process runs of
 * seed 5; usage per rollout from one queued run (2 arms, 2,187 rollouts: tests/integration/cost-of-goods.test.ts
 * prints it; read units again on 2026-12-04, once an experiment's rollouts stopped reading the rescue-job
 * table: 5,710 → 3,553 units). A deployment's own finished runs replace `perRollout` and the rescue share ({@link basisFrom}).
 */
export const DEFAULT_QUOTE_BASIS: QuoteBasis = {
  source: "defaults",
  jobs: 0,
  rescueShare: 0.45,
  evalTasks: { train: 93, heldout: 81 },
  perRollout: { computeMs: 12.7, lambdaGbSeconds: 0.031, dynamoReadUnits: 1.6, dynamoWriteUnits: 2.2, sqsRequests: 0.33, gpuSeconds: 0 },
};

/** Where finished experiments' usage is summed for the measured basis (`requests` counts the jobs; `#` is never in a key's id). */
export const QUOTE_BASIS_KEY = "#quote-basis";
/**
 * Where finished jobs' arms that rescue (or resample) count, as `rollouts`, their training
 * rollouts and the rescue, resample and re-anchor rollouts beyond them: the measured rescue share.
 */
export const QUOTE_RESCUE_KEYS = { training: "#quote-rescue-training", extra: "#quote-rescue-extra" } as const;
/** The meter rows that count again what payers were already metered for: nobody's to pay. */
const QUOTE_KEYS: ReadonlySet<string> = new Set([QUOTE_BASIS_KEY, ...Object.values(QUOTE_RESCUE_KEYS)]);
export const isQuoteBasisKey = (keyId: string): boolean => QUOTE_KEYS.has(keyId);

/** Training rollouts of a job's arms that rescue or resample, and what they ran beyond them. */
export function rescueRolloutsOf(results: readonly { arm: string; result: { rolloutBreakdown: { train: number; rescue: number; resample: number; reanchor: number } } }[]) {
  const rescuing = results.filter((r) => armDefinition(r.arm).rescue !== "none").map((r) => r.result.rolloutBreakdown);
  return {
    training: rescuing.reduce((n, b) => n + b.train, 0),
    extra: rescuing.reduce((n, b) => n + b.rescue + b.resample + b.reanchor, 0),
  };
}

/**
 * The basis from the summed usage of finished jobs (`requests` = jobs), or the defaults when none
 * finished; the rescue share is measured too once a finished job had an arm that rescues.
 */
export function basisFrom(summed: Usage | undefined, rescue?: { training: number; extra: number }): QuoteBasis {
  if (!summed || summed.requests === 0 || summed.rollouts === 0) return DEFAULT_QUOTE_BASIS;
  const fields = ["computeMs", ...COST_FIELDS] as const;
  const perRollout = Object.fromEntries(fields.map((f) => [f, summed[f] / summed.rollouts]));
  const rescueShare = rescue && rescue.training > 0 ? rescue.extra / rescue.training : DEFAULT_QUOTE_BASIS.rescueShare;
  return { ...DEFAULT_QUOTE_BASIS, source: "measured", jobs: summed.requests, rescueShare, perRollout };
}

/** This deployment's basis, from its meter's quote rows ({@link basisFrom}). */
export async function measuredBasis(meter: Pick<UsageMeter, "get">): Promise<QuoteBasis> {
  const [summed, training, extra] = await Promise.all([meter.get(QUOTE_BASIS_KEY), meter.get(QUOTE_RESCUE_KEYS.training), meter.get(QUOTE_RESCUE_KEYS.extra)]);
  return basisFrom(summed, { training: training.rollouts, extra: extra.rollouts });
}

/** `POST /v1/quotes`: an experiment request or a rescue request, as they would be posted. */
export const QuoteRequest = z.union([z.object({ experiment: ExperimentRequest }).strict(), z.object({ rescue: RescueRequest }).strict()]);
export type QuoteRequest = z.infer<typeof QuoteRequest>;
/** What can be quoted: a quote request, or an experiment plan as the operator's own runs give it. */
export type Quotable = QuoteRequest | { experiment: Pick<ExperimentPlan, "arms" | "seeds" | "train" | "evalSamples" | "evalTasks"> };

/**
 * The rollouts an experiment will run: per seed, the initial evaluation (H0 on both splits and
 * Rank-1 held-out), then per arm its training (steps × batch × group, plus the rescue share for an
 * arm that rescues), its learning-curve points (before training and every `curveEvery` steps,
 * Avg@3 on `curveTasks`) and its final evaluation; each evaluation covers at most `evalTasks` tasks per split.
 */
export function plannedRollouts(plan: Pick<ExperimentPlan, "arms" | "seeds" | "train" | "evalSamples" | "evalTasks">, basis: QuoteBasis): number {
  const t = TrainConfig.parse(plan.train);
  const cap = plan.evalTasks ?? Number.POSITIVE_INFINITY;
  const [train, heldout] = [Math.min(basis.evalTasks.train, cap), Math.min(basis.evalTasks.heldout, cap)];
  const s = plan.evalSamples;
  const perArm = plan.arms.map((arm) => {
    const def = armDefinition(arm);
    const training = t.steps * t.batchSize * t.groupSize * (def.rescue === "none" ? 1 : 1 + basis.rescueShare);
    const curve = t.curveEvery > 0 ? (Math.floor(t.steps / t.curveEvery) + 1) * Math.min(t.curveTasks, basis.evalTasks.train) * 3 : 0;
    return training + curve + (train + heldout + (def.rank1 ? heldout : 0)) * s;
  });
  return Math.round(plan.seeds.length * ((train + 2 * heldout) * s + perArm.reduce((a, b) => a + b, 0)));
}

/** A quote for `rollouts` rollouts at the basis's usage per rollout, with cost of goods and the charge. */
export function quoteRollouts(rollouts: number, basis: QuoteBasis, prices: { tariff: Prices; priceList: PriceList }): Quote {
  const usage = Object.fromEntries(Object.entries(basis.perRollout).map(([k, v]) => [k, (v ?? 0) * rollouts]));
  return Quote.parse({
    rollouts,
    usage: { ...usage, rollouts },
    costOfGoods: costOfGoods(usage, prices.priceList),
    chargeUsd: chargeUsd({ ...usage, rollouts }, prices.tariff),
    basis,
  });
}

/** What a quote request would cost: an experiment's planned rollouts, or a rescue's k × rollouts per harness. */
export function quote(req: Quotable, basis: QuoteBasis, prices: { tariff: Prices; priceList: PriceList }): Quote {
  const rollouts = "experiment" in req ? plannedRollouts(req.experiment, basis) : (req.rescue.harnesses?.length ?? req.rescue.k) * req.rescue.rolloutsPerHarness;
  return quoteRollouts(rollouts, basis, prices);
}
