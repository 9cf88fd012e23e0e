/* Invariants: see ./README.md. */

export interface AdvantageOptions {
  /** Divide by the group's sample std (GRPO). False gives Dr.GRPO's mean-centred rewards. */
  normalizeStd: boolean;
  epsilon: number;
}

export const defaultAdvantageOptions: AdvantageOptions = { normalizeStd: true, epsilon: 1e-6 };

/**
 * Group-relative advantages A_i = (r_i − mean) / (std + ε), std with Bessel's correction.
 *
 * @example
 * groupAdvantages([1, 0, 0, 0]); // [1.5, -0.5, -0.5, -0.5]
 */
export function groupAdvantages(
  rewards: readonly number[],
  options: AdvantageOptions = defaultAdvantageOptions,
): number[] {
  const n = rewards.length;
  if (n <= 1) return rewards.map(() => 0);
  const mean = rewards.reduce((s, r) => s + r, 0) / n;
  const centred = rewards.map((r) => r - mean);
  if (centred.every((c) => Math.abs(c) < 1e-12)) return rewards.map(() => 0);
  if (!options.normalizeStd) return centred;
  const std = Math.sqrt(centred.reduce((s, c) => s + c * c, 0) / (n - 1));
  return centred.map((c) => c / (std + options.epsilon));
}

/** Reward variance > 0: the group carries a learning signal. */
export function hasSignal(rewards: readonly number[]): boolean {
  return rewards.some((r) => r !== rewards[0]);
}
