import { z } from "zod";
import { countsAt, type Counts, type Profile } from "../profile/profile.ts";
import type { Rng } from "../util/rng.ts";

/**
 * The adaptive rescue's bounds, declared once:
 * - `evidenceCap`: most pseudo-rollouts one option's evidence weighs (a profile's counts, or the
 *   run's resamples, scaled down to it), so the posterior keeps moving as the policy changes;
 * - `floor`: below this drawn success rate per rollout for every option, the group gets nothing
 *   (the budget waits for a group where some option looks better).
 */
export const ADAPTIVE = { evidenceCap: 20, floor: 0.02 } as const;

/** One option's Beta posterior over its success rate per rollout on an all-fail group. */
export const OptionPosterior = z.object({ id: z.string(), alpha: z.number().positive(), beta: z.number().positive() });
export type OptionPosterior = z.infer<typeof OptionPosterior>;

/** What the adaptive rescue chose for one all-fail group, and the estimates it chose by. */
export const AdaptiveChoice = z.object({
  option: z.enum(["siblings", "resample", "none"]),
  /** Why: the best draw won ("best-draw"), every draw fell below the floor, or no option was affordable. */
  reason: z.enum(["best-draw", "below-floor", "budget"]),
  /**
   * Per option (the router's Top-k siblings in its order, then H0 as "h0"): its posterior, mean, this group's draw and
   * the rollouts it would cost.
   */
  estimates: z.array(
    OptionPosterior.extend({
      mean: z.number(),
      draw: z.number(),
      cost: z.number().int().min(0),
      expectedSuccesses: z.number(),
      affordable: z.boolean(),
    }),
  ),
  /** Rollouts per harness the choice spends (empty for "none"); under "siblings" the split among them. */
  allocation: z.record(z.string(), z.number().int().min(1)),
  /** Rollouts the choice spends. */
  spend: z.number().int().min(0),
});
export type AdaptiveChoice = z.infer<typeof AdaptiveChoice>;

/** The H0 resample option's id in estimates and allocations. */
export const H0_OPTION = "h0";

/** A Gamma(shape, 1) draw (Marsaglia–Tsang; shape below 1 boosted by a uniform power). */
function gamma(shape: number, rng: Rng): number {
  if (shape < 1) return gamma(shape + 1, rng) * Math.max(rng.next(), Number.MIN_VALUE) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const u1 = Math.max(rng.next(), Number.MIN_VALUE);
    const x = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * rng.next());
    const v = (1 + c * x) ** 3;
    if (v <= 0) continue;
    const u = Math.max(rng.next(), Number.MIN_VALUE);
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/**
 * A draw from Beta(alpha, beta) on `rng`.
 *
 * @example
 * betaDraw(2, 8, createRng(1)); // about 0.2 on average
 */
export function betaDraw(alpha: number, beta: number, rng: Rng): number {
  const a = gamma(alpha, rng);
  return a / (a + gamma(beta, rng));
}

/** Beta(1 + s·w, 1 + f·w), the counts scaled down to at most {@link ADAPTIVE}.evidenceCap pseudo-rollouts. */
export function cappedPosterior(id: string, c: Counts): OptionPosterior {
  const w = c.attempts > ADAPTIVE.evidenceCap ? ADAPTIVE.evidenceCap / c.attempts : 1;
  return { id, alpha: 1 + c.successes * w, beta: 1 + (c.attempts - c.successes) * w };
}

const sum = (cs: readonly (Counts | undefined)[]): Counts =>
  cs.reduce<Counts>(
    (t, c) => ({ attempts: t.attempts + (c?.attempts ?? 0), successes: t.successes + (c?.successes ?? 0) }),
    { attempts: 0, successes: 0 },
  );

/**
 * A sibling's rescue evidence for this group, from its profile: its rescues of this family under
 * these failure tags; none there, its rescues of this family under any tag; none there, all its
 * rescues. (A profile learns from every rescue of the run, so this is updated every step.)
 */
export function siblingEvidence(profile: Profile | undefined, family: string, failureTags: readonly string[]): Counts {
  if (!profile) return { attempts: 0, successes: 0 };
  const tagged = sum([...new Set(failureTags)].map((t) => countsAt(profile.byFailureTag, `${family}/${t}`)));
  if (tagged.attempts > 0) return tagged;
  const entries = Object.entries(profile.byFailureTag);
  const family_ = sum(entries.filter(([k]) => k.startsWith(`${family}/`)).map(([, c]) => c));
  return family_.attempts > 0 ? family_ : sum(entries.map(([, c]) => c));
}

/** What one adaptive choice reads: the options' posteriors, what each costs, and the extra rollouts left. */
export interface AdaptiveInput {
  /** The router's Top-k siblings, in its order. */
  siblings: readonly OptionPosterior[];
  /** H0 resampled (id {@link H0_OPTION}). */
  resample: OptionPosterior;
  /** Rollouts a sibling rescue spends (split among the siblings) and a resample spends (all under H0). */
  cost: { siblings: number; resample: number };
  budgetLeft: number;
}

/**
 * Thompson sampling over the options, pure given `rng`: one draw per option from its posterior;
 * the affordable option with the highest draw (a success rate per rollout, so options that spend
 * different numbers of rollouts compare per rollout spent) wins, unless every draw is below
 * {@link ADAPTIVE}.floor (then nothing). A sibling win splits its rollouts by probability matching:
 * the first goes to the winner, each further one to the sibling with the highest fresh draw. Every
 * option keeps a chance of winning, so none starves.
 *
 * @example
 * const choice = chooseAdaptive({ siblings, resample, cost: { siblings: 2, resample: 4 }, budgetLeft: 40 }, rng);
 */
export function chooseAdaptive(input: AdaptiveInput, rng: Rng): AdaptiveChoice {
  const options = [...input.siblings, input.resample];
  const cost = (o: OptionPosterior) => (o.id === H0_OPTION ? input.cost.resample : input.cost.siblings);
  const estimates = options.map((o) => {
    const mean = o.alpha / (o.alpha + o.beta);
    return {
      ...o,
      mean,
      draw: betaDraw(o.alpha, o.beta, rng),
      cost: cost(o),
      expectedSuccesses: mean * cost(o),
      affordable: cost(o) > 0 && cost(o) <= input.budgetLeft,
    };
  });
  const open = estimates.filter((e) => e.affordable && (e.id === H0_OPTION || input.siblings.length > 0));
  if (open.length === 0) return { option: "none", reason: "budget", estimates, allocation: {}, spend: 0 };
  const best = open.reduce((a, b) => (b.draw > a.draw ? b : a));
  if (best.draw < ADAPTIVE.floor) return { option: "none", reason: "below-floor", estimates, allocation: {}, spend: 0 };
  if (best.id === H0_OPTION)
    return {
      option: "resample",
      reason: "best-draw",
      estimates,
      allocation: { [H0_OPTION]: best.cost },
      spend: best.cost,
    };
  const allocation: Record<string, number> = { [best.id]: 1 };
  for (let i = 1; i < best.cost; i++) {
    const draws = input.siblings.map((s) => ({ id: s.id, draw: betaDraw(s.alpha, s.beta, rng) }));
    const pick = draws.reduce((a, b) => (b.draw > a.draw ? b : a)).id;
    allocation[pick] = (allocation[pick] ?? 0) + 1;
  }
  return { option: "siblings", reason: "best-draw", estimates, allocation, spend: best.cost };
}
