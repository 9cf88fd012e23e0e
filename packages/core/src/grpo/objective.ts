/* Invariants: see ./README.md. */

export interface StepLossInput {
  logProb: number;
  behaviourLogProb: number;
  /** Log-probability under the reference policy (for the KL penalty); omit when klCoef is 0. */
  referenceLogProb?: number;
  advantage: number;
  clipEpsilon: number;
  klCoef: number;
}

export interface StepLoss {
  loss: number;
  /** d loss / d logProb: the parameterisation multiplies this by ∇logProb. */
  gradCoef: number;
  clipped: boolean;
  kl: number;
}

/**
 * PPO-clip loss for one step, −min(ρA, clip(ρ, 1±ε)A), plus klCoef·k3(π‖π_ref), with
 * k3 = exp(ref − logp) − (ref − logp) − 1 (verl's "low_var_kl").
 *
 * @example
 * ppoClipStepLoss({ logProb: -1, behaviourLogProb: -1, advantage: 1, clipEpsilon: 0.2, klCoef: 0 }).gradCoef; // -1
 */
export function ppoClipStepLoss(input: StepLossInput): StepLoss {
  const ratio = Math.exp(input.logProb - input.behaviourLogProb);
  const a = input.advantage;
  const unclipped = ratio * a;
  const clippedRatio = Math.min(Math.max(ratio, 1 - input.clipEpsilon), 1 + input.clipEpsilon);
  const clippedValue = clippedRatio * a;
  const clipped = clippedValue < unclipped;
  let loss = -Math.min(unclipped, clippedValue);
  let gradCoef = clipped ? 0 : -unclipped;
  let kl = 0;
  if (input.klCoef > 0 && input.referenceLogProb !== undefined) {
    const d = input.referenceLogProb - input.logProb;
    kl = Math.exp(d) - d - 1;
    loss += input.klCoef * kl;
    gradCoef += input.klCoef * (1 - Math.exp(d));
  }
  return { loss, gradCoef, clipped, kl };
}
