import { COST_FIELDS } from "../billing/cost-of-goods.ts";
import type { Usage, UsageMeter } from "../billing/usage.ts";

/** The usage fields a quote prices: compute time and each cost-of-goods field. */
export const QUOTED_FIELDS = ["computeMs", ...COST_FIELDS] as const;
type Rates = Record<string, number>;

/**
 * The meter rows of a least-squares fit of a finished job's usage on its two kinds of rollouts:
 * `x1` the rollouts every arm runs (evaluation, training, curve points) and `x2` the extra ones of
 * arms that rescue (rescue, resample, re-anchor: they carry the routing decisions' ballots). Each
 * row is additive over jobs: `base` holds Σ x1·usage per field with Σ x1² as `rollouts` and the
 * jobs as `requests`, `extra` Σ x2·usage with Σ x2², `cross` Σ x1·x2 as `rollouts`.
 */
export const QUOTE_FIT_KEYS = {
  base: "#quote-fit-base",
  extra: "#quote-fit-extra",
  cross: "#quote-fit-cross",
} as const;
export interface QuoteFit {
  base: Usage;
  extra: Usage;
  cross: number;
}
/** Below this share of Σx1²·Σx2² left in the determinant the jobs' mixes are too alike to tell the two rates apart. */
const MIN_INDEPENDENCE = 0.05;

const scaled = (used: Usage, x: number) => Object.fromEntries(QUOTED_FIELDS.map((f) => [f, used[f] * x]));

/** Adds one finished job (its metered usage, and its extra rollouts) to the fit's rows. */
export async function addJobToFit(meter: Pick<UsageMeter, "add">, used: Usage, extraRollouts: number): Promise<void> {
  const x2 = Math.min(extraRollouts, used.rollouts);
  const x1 = used.rollouts - x2;
  await Promise.all([
    meter.add(QUOTE_FIT_KEYS.base, { ...scaled(used, x1), rollouts: x1 * x1, requests: 1 }),
    meter.add(QUOTE_FIT_KEYS.extra, { ...scaled(used, x2), rollouts: x2 * x2 }),
    meter.add(QUOTE_FIT_KEYS.cross, { rollouts: x1 * x2 }),
  ]);
}

export async function readFit(meter: Pick<UsageMeter, "get">): Promise<QuoteFit> {
  const [base, extra, cross] = await Promise.all([
    meter.get(QUOTE_FIT_KEYS.base),
    meter.get(QUOTE_FIT_KEYS.extra),
    meter.get(QUOTE_FIT_KEYS.cross),
  ]);
  return { base, extra, cross: cross.rollouts };
}

/**
 * Usage per rollout and per extra rollout, field by field, from the fit; a field whose two rates
 * would not both be ≥ 0 keeps the average `fallback` for both. Undefined when fewer than two jobs
 * were fitted or their mixes of the two kinds are too alike.
 */
export function solveFit(
  fit: QuoteFit | undefined,
  fallback: Rates,
): { perRollout: Rates; perExtraRollout: Rates } | undefined {
  if (!fit || fit.base.requests < 2) return undefined;
  const [s11, s22, s12] = [fit.base.rollouts, fit.extra.rollouts, fit.cross];
  const det = s11 * s22 - s12 * s12;
  if (s11 <= 0 || s22 <= 0 || det < MIN_INDEPENDENCE * s11 * s22) return undefined;
  const perRollout: Rates = {};
  const perExtraRollout: Rates = {};
  for (const f of QUOTED_FIELDS) {
    const a = (s22 * fit.base[f] - s12 * fit.extra[f]) / det;
    const b = (s11 * fit.extra[f] - s12 * fit.base[f]) / det;
    const fits = a >= 0 && b >= 0;
    perRollout[f] = fits ? a : (fallback[f] ?? 0);
    perExtraRollout[f] = fits ? b : (fallback[f] ?? 0);
  }
  return { perRollout, perExtraRollout };
}
