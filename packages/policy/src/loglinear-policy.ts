import { z } from "zod";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import type { ActionChoice, Policy, PolicyObservation, Rng, UpdateBatch, UpdateResult } from "@harness-s/core";
import { ppoClipStepLoss } from "@harness-s/core/grpo";
import { CONTEXT_CORRECTIONS } from "@harness-s/core";
import { Adam } from "./adam.ts";
import { featureLogits, featuresOf, indexWeights, setIndexed, type WeightIndex } from "./weight-index.ts";

export { featuresOf } from "./weight-index.ts";

export const LogLinearOptions = z.object({
  /** Fixed instruction-following strength: logit bonus of a hinted action. Not trainable. */
  cueStrength: z.number().min(0).default(5),
  /**
   * Updates over which the hint bonus halves (a policy that grows less steerable as training
   * sharpens it, so siblings that work through hints lose value as it learns); unset: fixed.
   */
  cueHalfLife: z.number().positive().optional(),
  /** Fixed logit penalty on an action that already produced an error in this episode. */
  failedPenalty: z.number().min(0).default(2),
  /** Initial weights, keyed `family|feature|action`. */
  prior: z.record(z.string(), z.number()).default({}),
  adamBeta1: z.number().default(0.9),
  adamBeta2: z.number().default(0.999),
});
export type LogLinearOptions = z.infer<typeof LogLinearOptions>;

/**
 * The embedded CPU policy: logits(a) = Σ θ[feature|a] + cueStrength·[a hinted] − failedPenalty·[a failed].
 * Only θ is trained, so behaviour learned under a sibling's hints reaches H0 through shared features.
 *
 * @example
 * const policy = new LogLinearPolicy({ prior: embeddedPolicyPrior() });
 * const { action, logProb } = await policy.act(observation, rng);
 */
export class LogLinearPolicy implements Policy {
  private readonly weights = new Map<string, number>();
  private readonly index: WeightIndex;
  private readonly referenceIndex: WeightIndex;
  private readonly options: LogLinearOptions;
  private readonly adam: Adam;
  private currentVersion = 0;

  constructor(options: Partial<LogLinearOptions> = {}) {
    this.options = LogLinearOptions.parse(options);
    for (const [k, v] of Object.entries(this.options.prior)) this.weights.set(k, v);
    this.index = indexWeights(this.weights);
    this.referenceIndex = indexWeights(this.weights);
    this.adam = new Adam(this.options.adamBeta1, this.options.adamBeta2);
  }

  version(): number {
    return this.currentVersion;
  }

  /** The logit bonus of a hinted action at the current version. */
  hintBonus(): number {
    const { cueStrength, cueHalfLife } = this.options;
    return cueHalfLife === undefined ? cueStrength : cueStrength * 2 ** (-this.currentVersion / cueHalfLife);
  }

  /** Action probabilities in the order of `obs.tools`; `hints` overrides the observation's hints. */
  probabilities(obs: PolicyObservation, hints: readonly string[] = obs.hints): number[] {
    return this.scored(obs, hints, this.index);
  }

  private scored(obs: PolicyObservation, hints: readonly string[], index: WeightIndex): number[] {
    const logits = featureLogits(index, obs);
    const bonus = this.hintBonus();
    const { tools, failedActions } = obs;
    for (let j = 0; j < tools.length; j++) {
      if (hints.includes(tools[j]!)) logits[j]! += bonus;
      if (failedActions.includes(tools[j]!)) logits[j]! -= this.options.failedPenalty;
    }
    const max = Math.max(...logits);
    let total = 0;
    for (let j = 0; j < logits.length; j++) {
      logits[j] = Math.exp(logits[j]! - max);
      total += logits[j]!;
    }
    for (let j = 0; j < logits.length; j++) logits[j] = logits[j]! / total;
    return logits;
  }

  async act(obs: PolicyObservation, rng: Rng): Promise<ActionChoice> {
    const probs = this.probabilities(obs);
    let u = rng.next();
    let i = 0;
    for (; i < probs.length - 1; i++) {
      u -= probs[i]!;
      if (u < 0) break;
    }
    return { action: obs.tools[i]!, logProb: Math.log(probs[i]!) };
  }

  async update(batch: UpdateBatch): Promise<UpdateResult> {
    if (batch.baseVersion !== this.currentVersion)
      throw new StalePolicyVersionError(this.currentVersion, batch.baseVersion);
    const s = batch.settings;
    const base = s.rescueContext === "base";
    const correction = CONTEXT_CORRECTIONS[base ? (s.rescueCorrection ?? "none") : "none"];
    const steps = batch.samples.flatMap((sample) =>
      sample.rollout.steps
        .filter((st) => !st.forced && !(s.maskIntercepted && st.intercepted))
        .map((st) => {
          const hints = base ? st.observation.baseHints : st.observation.hints;
          // A rebasing correction: the H0-context log-probability at the weights that sampled (this update's start) is
          // the behaviour one.
          const behaviourLogProb = correction.rebase
            ? Math.log(this.probabilities(st.observation, hints)[st.observation.tools.indexOf(st.action)]!)
            : st.logProb;
          return {
            step: st,
            advantage: sample.advantage * correction.weight(behaviourLogProb, st.logProb),
            hints,
            behaviourLogProb,
          };
        }),
    );
    let loss = 0;
    let clipped = 0;
    let kl = 0;
    for (let epoch = 0; epoch < s.epochs; epoch++) {
      const grad = new Map<string, number>();
      loss = 0;
      clipped = 0;
      kl = 0;
      for (const { step, advantage, hints, behaviourLogProb } of steps) {
        const obs = step.observation;
        const probs = this.probabilities(obs, hints);
        const a = obs.tools.indexOf(step.action);
        const refProbs = s.klCoef > 0 ? this.scored(obs, hints, this.referenceIndex) : undefined;
        const l = ppoClipStepLoss({
          logProb: Math.log(probs[a]!),
          behaviourLogProb,
          referenceLogProb: refProbs ? Math.log(refProbs[a]!) : undefined,
          advantage,
          clipEpsilon: s.clipEpsilon,
          klCoef: s.klCoef,
        });
        loss += l.loss;
        kl += l.kl;
        if (l.clipped) clipped++;
        if (l.gradCoef === 0) continue;
        for (const f of featuresOf(obs)) {
          obs.tools.forEach((b, j) => {
            const key = `${f}|${b}`;
            grad.set(key, (grad.get(key) ?? 0) + (l.gradCoef * ((j === a ? 1 : 0) - probs[j]!)) / steps.length);
          });
        }
      }
      this.adam.step(this.weights, grad, s.learningRate);
      for (const key of grad.keys()) {
        const w = this.weights.get(key);
        if (w !== undefined) setIndexed(this.index, key, w);
      }
    }
    this.currentVersion++;
    const n = Math.max(1, steps.length);
    return {
      version: this.currentVersion,
      metrics: { loss: loss / n, clippedFraction: clipped / n, kl: kl / n, steps: steps.length },
    };
  }

  /** The trained weights, for saving and inspection. */
  snapshot(): { version: number; weights: Record<string, number> } {
    return { version: this.currentVersion, weights: Object.fromEntries(this.weights) };
  }
}
