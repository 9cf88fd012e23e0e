import { describe, expect, it } from "vitest";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { createRng, type PolicyObservation, type UpdateSettings } from "@harness-s/core";
import { LogLinearPolicy, featuresOf } from "@harness-s/policy";
import { makeRollout } from "../factories.ts";

const obs: PolicyObservation = {
  family: "app",
  tools: ["list_items", "next_page", "submit"],
  event: "page:more",
  facts: ["listed"],
  taskTags: ["app"],
  hints: [],
  baseHints: [],
  failedActions: [],
  turnsLeft: 5,
};
const settings: UpdateSettings = {
  learningRate: 0.2,
  clipEpsilon: 0.2,
  klCoef: 0,
  epochs: 2,
  rescueContext: "as-generated",
  maskIntercepted: true,
};

function sampleWith(policy: LogLinearPolicy, action: string, o = obs) {
  const i = o.tools.indexOf(action);
  return {
    action,
    logProb: Math.log(policy.probabilities(o)[i]!),
    forced: false,
    intercepted: false,
    result: "x",
    observation: o,
  };
}

describe("LogLinearPolicy", () => {
  it("uses family-prefixed features of event, facts and tags", () => {
    expect(featuresOf(obs)).toEqual(["app|bias", "app|ev:page:more", "app|has:listed", "app|tag:app"]);
  });

  it("adds the fixed cue strength to a hinted action and subtracts the penalty per failure", () => {
    const p = new LogLinearPolicy({ cueStrength: 2, failedPenalty: 1 });
    const uniform = p.probabilities(obs);
    expect(uniform[0]).toBeCloseTo(1 / 3, 12);
    const hinted = p.probabilities({ ...obs, hints: ["next_page"] });
    expect(hinted[1]! / hinted[0]!).toBeCloseTo(Math.exp(2), 9);
    const failed = p.probabilities({ ...obs, failedActions: ["list_items"] });
    expect(failed[1]! / failed[0]!).toBeCloseTo(Math.exp(1), 9);
  });

  it("samples reproducibly and reports the behaviour log-probability", async () => {
    const p = new LogLinearPolicy({ prior: { "app|ev:page:more|next_page": 1 } });
    const a = await p.act(obs, createRng(5));
    const b = await p.act(obs, createRng(5));
    expect(a).toEqual(b);
    expect(a.logProb).toBeCloseTo(Math.log(p.probabilities(obs)[obs.tools.indexOf(a.action)]!), 12);
  });

  it("raises the probability of a positive-advantage action, lowers a negative one, and bumps the version", async () => {
    const p = new LogLinearPolicy();
    const before = p.probabilities(obs);
    const good = makeRollout({ steps: [sampleWith(p, "next_page")], success: true, reward: 1 });
    const bad = makeRollout({ steps: [sampleWith(p, "submit")] });
    const r = await p.update({
      baseVersion: 0,
      samples: [
        { rollout: good, advantage: 1 },
        { rollout: bad, advantage: -1 },
      ],
      settings,
    });
    const after = p.probabilities(obs);
    expect(r.version).toBe(1);
    expect(p.version()).toBe(1);
    expect(after[1]!).toBeGreaterThan(before[1]!);
    expect(after[2]!).toBeLessThan(before[2]!);
  });

  it("never trains the cue strength: the hint bonus is the same after updates", async () => {
    const p = new LogLinearPolicy({ cueStrength: 3 });
    const hintedObs = { ...obs, hints: ["submit"] };
    const good = makeRollout({ steps: [sampleWith(p, "submit", hintedObs)], success: true, reward: 1 });
    for (let i = 0; i < 5; i++)
      await p.update({ baseVersion: i, samples: [{ rollout: good, advantage: 1 }], settings });
    const withHint = p.probabilities(hintedObs);
    const without = p.probabilities(obs);
    const ratio = (ps: number[]) => ps[2]! / ps[0]!;
    expect(ratio(withHint) / ratio(without)).toBeCloseTo(Math.exp(3), 6);
  });

  it("with a hint half-life, halves the hint bonus every half-life updates (and keeps it fixed without one)", async () => {
    // Prepare
    const fading = new LogLinearPolicy({ cueStrength: 4, cueHalfLife: 2 });
    const good = makeRollout({ steps: [sampleWith(fading, "submit")], success: true, reward: 1 });
    // Act
    for (let i = 0; i < 4; i++)
      await fading.update({ baseVersion: i, samples: [{ rollout: good, advantage: 1 }], settings });
    // Assess: 4 updates = 2 half-lives, so the bonus is 4 / 4 = 1 logit
    const ratio = (ps: number[]) => ps[2]! / ps[0]!;
    expect(fading.hintBonus()).toBeCloseTo(1, 10);
    expect(ratio(fading.probabilities({ ...obs, hints: ["submit"] })) / ratio(fading.probabilities(obs))).toBeCloseTo(
      Math.exp(1),
      6,
    );
    expect(new LogLinearPolicy({ cueStrength: 4 }).hintBonus()).toBe(4);
  });

  it("leaves forced and (by default) intercepted steps out of the loss", async () => {
    const p = new LogLinearPolicy();
    const forced = makeRollout({
      steps: [
        { ...sampleWith(p, "submit"), forced: true },
        { ...sampleWith(p, "next_page"), intercepted: true },
      ],
    });
    const r = await p.update({ baseVersion: 0, samples: [{ rollout: forced, advantage: 1 }], settings });
    expect(r.metrics.steps).toBe(0);
    expect(p.probabilities(obs)[0]).toBeCloseTo(1 / 3, 12);
    const r2 = await p.update({
      baseVersion: 1,
      samples: [{ rollout: forced, advantage: 1 }],
      settings: { ...settings, maskIntercepted: false },
    });
    expect(r2.metrics.steps).toBe(1);
  });

  it("refuses an update based on a stale version", async () => {
    const p = new LogLinearPolicy();
    await expect(p.update({ baseVersion: 3, samples: [], settings })).rejects.toThrow(StalePolicyVersionError);
  });
});
