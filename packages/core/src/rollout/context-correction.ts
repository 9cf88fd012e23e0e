import { z } from "zod";

/**
 * The most a rescued token's importance weight may be (truncated importance sampling, as TIS
 * truncates the sampler–trainer ratio): declared once, for every correction that truncates.
 */
export const CONTEXT_WEIGHT_BOUND = 2;

/**
 * How a rescued token trained in H0's context (`rescueContext: "base"`) is corrected for the
 * context it was sampled in: the update's behaviour log-probability is then its H0-context one
 * (`rebase`: the ratio starts at 1, as on-policy in that context), and its advantage is weighted by
 * `weight(baseLogprob, sampledLogprob)`.
 */
export interface ContextCorrectionEntry {
  /** Take the H0-context log-probability as the behaviour one (a token path replaying in H0's context always does). */
  rebase: boolean;
  weight: (baseLogprob: number, sampledLogprob: number) => number;
}

/**
 * The registered corrections: none (weight 1; the embedded policy keeps the sampled context's
 * behaviour log-probability, as before), or the truncated ratio min(π(y|H0 context) / π(y|sampled
 * context), {@link CONTEXT_WEIGHT_BOUND}) per token: an unbiased correction of the change of context
 * up to the truncation, which bounds its variance.
 */
export const CONTEXT_CORRECTIONS = {
  none: { rebase: false, weight: () => 1 },
  "truncated-is": { rebase: true, weight: (base, sampled) => Math.min(Math.exp(base - sampled), CONTEXT_WEIGHT_BOUND) },
} satisfies Record<string, ContextCorrectionEntry>;
export type ContextCorrectionName = keyof typeof CONTEXT_CORRECTIONS;
export const ContextCorrection = z.enum(
  Object.keys(CONTEXT_CORRECTIONS) as [ContextCorrectionName, ...ContextCorrectionName[]],
);

/**
 * Per-token weights of one turn's completion under `correction`.
 *
 * @example
 * contextWeights("truncated-is", [Math.log(0.2)], [Math.log(0.4)]); // [0.5]
 */
export function contextWeights(
  correction: ContextCorrectionName,
  baseLogprobs: readonly number[],
  sampledLogprobs: readonly number[],
): number[] {
  const { weight } = CONTEXT_CORRECTIONS[correction];
  return baseLogprobs.map((b, i) => weight(b, sampledLogprobs[i] ?? b));
}
