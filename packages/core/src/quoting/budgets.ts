import { BudgetExceededError } from "../errors.ts";
import { chargeUsd, type PriceList, type Prices } from "../billing/cost-of-goods.ts";
import type { UsageMeter } from "../billing/usage.ts";
import type { Quote } from "../billing/quote-schema.ts";
import { measuredBasis, quote, type Quotable } from "./quotes.ts";
import { configurationBasis } from "./quote-config.ts";
import type { ServedModel } from "../models/served-model.ts";

/**
 * What quoting needs: the meter (this deployment's measured basis, a key's spend so far), the tariff and the price
 * list.
 */
export interface QuotingDeps {
  meter: Pick<UsageMeter, "get">;
  tariff: Prices;
  priceList: PriceList;
  /** The models this deployment serves, for the device rate each declares (the first: a request naming none). */
  served?: readonly ServedModel[];
}

/**
 * `POST /v1/quotes`: the estimate for a request, on this deployment's measured usage per rollout
 * when it has finished jobs, else on the defaults (the quote says which); an experiment's on its
 * configuration's (environment and model: tokens per rollout, GPU seconds per token) likewise.
 *
 * @example
 * const q = await quoteRequest({ rescue: RescueRequest.parse({ poolId: "p", taskId: "t", failureTags: ["x"] }) }, deps);
 */
export async function quoteRequest(req: Quotable, deps: QuotingDeps): Promise<Quote> {
  const config =
    "experiment" in req
      ? await configurationBasis(
          deps.meter,
          { env: req.experiment.env ?? "embedded", model: req.experiment.model },
          declaredRate(deps.served, req.experiment.model),
        )
      : undefined;
  return quote(req, await measuredBasis(deps.meter), { tariff: deps.tariff, priceList: deps.priceList }, config);
}

/** The device seconds per token the model a request names declares (the first served model where it names none). */
const declaredRate = (served: readonly ServedModel[] | undefined, model: string | undefined): number | undefined =>
  (model === undefined ? served?.[0] : served?.find((m) => m.name === model))?.secondsPerToken;

/**
 * Refuses (402, before any work) a request whose quoted charge is above the job's own USD budget
 * or above what is left of its key's (the key's budget less its charge so far at the tariff).
 */
export async function ensureWithinBudget(
  q: Quote,
  key: { id: string; budgetUsd?: number },
  jobBudgetUsd: number | undefined,
  deps: QuotingDeps,
): Promise<void> {
  if (jobBudgetUsd !== undefined && q.chargeUsd > jobBudgetUsd)
    throw new BudgetExceededError(
      `quoted ${q.chargeUsd.toFixed(4)} USD (${q.rollouts} rollouts), above this request's budget of ${jobBudgetUsd} USD`,
    );
  if (key.budgetUsd === undefined) return;
  const left = key.budgetUsd - chargeUsd(await deps.meter.get(key.id), deps.tariff);
  if (q.chargeUsd > left)
    throw new BudgetExceededError(
      `quoted ${q.chargeUsd.toFixed(4)} USD (${q.rollouts} rollouts), above the ${Math.max(0, left).toFixed(4)} USD left of this key's budget of ${key.budgetUsd} USD`,
    );
}

/**
 * Quotes `req` and refuses it (402) above a budget ({@link ensureWithinBudget}); a key without a budget is not quoted
 * (no reads).
 */
export async function ensureAffordable(
  req: Quotable,
  key: { id: string; budgetUsd?: number },
  deps: QuotingDeps,
): Promise<void> {
  if (key.budgetUsd === undefined) return;
  await ensureWithinBudget(await quoteRequest(req, deps), key, undefined, deps);
}

/**
 * A request's price as a product's start use-case asks for it: quoted, refused (402) above the
 * job's own USD budget or what is left of the key's, and answered with the tariff it was priced at.
 * Products take it as a function, so quoting stays above them.
 *
 * @example
 * await startExperiment(req, key.id, { ...deps, price: (plan) => price({ experiment: plan }, plan.budget?.usd) });
 */
export function budgetedPricer(deps: QuotingDeps, key: { id: string; budgetUsd?: number }) {
  return async (req: Quotable, jobBudgetUsd: number | undefined): Promise<{ quote: Quote; tariff: Prices }> => {
    const quoted = await quoteRequest(req, deps);
    await ensureWithinBudget(quoted, key, jobBudgetUsd, deps);
    return { quote: quoted, tariff: deps.tariff };
  };
}
