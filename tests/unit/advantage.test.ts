import { describe, expect, it } from "vitest";
import { groupAdvantages, hasSignal, ppoClipStepLoss } from "@harness-s/core/grpo";

describe("groupAdvantages", () => {
  it("matches verl's sample-std GRPO advantage for [1,0,0,0]", () => {
    const adv = groupAdvantages([1, 0, 0, 0]);
    expect(adv[0]).toBeCloseTo(1.5, 5);
    for (const a of adv.slice(1)) expect(a).toBeCloseTo(-0.5, 5);
  });

  it("gives zeros for an all-equal group", () => {
    expect(groupAdvantages([0, 0, 0, 0])).toEqual([0, 0, 0, 0]);
    expect(groupAdvantages([1, 1, 1])).toEqual([0, 0, 0]);
  });

  it("gives zero for a single rollout", () => {
    expect(groupAdvantages([1])).toEqual([0]);
  });

  it("only centres the rewards without std division (Dr.GRPO)", () => {
    expect(groupAdvantages([1, 0, 0, 0], { normalizeStd: false, epsilon: 1e-6 })).toEqual([0.75, -0.25, -0.25, -0.25]);
  });

  it("sums to zero within a group", () => {
    const adv = groupAdvantages([0.2, 0.9, 0.4, 0.1, 1]);
    expect(adv.reduce((s, a) => s + a, 0)).toBeCloseTo(0, 10);
  });

  it("detects reward variance", () => {
    expect(hasSignal([0, 0, 1])).toBe(true);
    expect(hasSignal([0, 0, 0])).toBe(false);
  });
});

describe("ppoClipStepLoss", () => {
  const base = { behaviourLogProb: Math.log(0.5), clipEpsilon: 0.2, klCoef: 0 };

  it("has gradient −ρA inside the clip range", () => {
    const l = ppoClipStepLoss({ ...base, logProb: Math.log(0.55), advantage: 2 });
    expect(l.clipped).toBe(false);
    expect(l.gradCoef).toBeCloseTo(-1.1 * 2, 6);
    expect(l.loss).toBeCloseTo(-1.1 * 2, 6);
  });

  it("stops the gradient once a positive-advantage ratio passes 1+ε", () => {
    const l = ppoClipStepLoss({ ...base, logProb: Math.log(0.7), advantage: 1 });
    expect(l.clipped).toBe(true);
    expect(l.gradCoef).toBe(0);
    expect(l.loss).toBeCloseTo(-1.2, 6);
  });

  it("keeps the gradient when the ratio moved against a negative advantage", () => {
    const l = ppoClipStepLoss({ ...base, logProb: Math.log(0.7), advantage: -1 });
    expect(l.clipped).toBe(false);
    expect(l.gradCoef).toBeCloseTo(1.4, 6);
  });

  it("adds a k3 KL penalty whose gradient matches a finite difference", () => {
    const at = (lp: number) =>
      ppoClipStepLoss({ ...base, logProb: lp, referenceLogProb: Math.log(0.3), advantage: 0, klCoef: 0.5 });
    const lp = Math.log(0.5);
    const h = 1e-6;
    const numeric = (at(lp + h).loss - at(lp - h).loss) / (2 * h);
    expect(at(lp).kl).toBeGreaterThan(0);
    expect(at(lp).gradCoef).toBeCloseTo(numeric, 5);
  });
});
