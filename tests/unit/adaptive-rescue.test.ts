import { describe, expect, it } from "vitest";
import { createRng } from "@harness-s/core";
import {
  ADAPTIVE,
  H0_OPTION,
  betaDraw,
  cappedPosterior,
  chooseAdaptive,
  siblingEvidence,
  type AdaptiveInput,
  type OptionPosterior,
} from "@harness-s/core/training";
import { ArmConfig, TrainConfig, trainArm, type StepRecord } from "@harness-s/core/training";
import { armConfig, ExperimentConfig } from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { makeProfile, makeTrainDeps } from "../factories.ts";

const beta = (id: string, alpha: number, b: number): OptionPosterior => ({ id, alpha, beta: b });
const input = (
  siblings: OptionPosterior[],
  h0: [number, number],
  over: Partial<AdaptiveInput> = {},
): AdaptiveInput => ({
  siblings,
  resample: beta(H0_OPTION, ...h0),
  cost: { siblings: 2, resample: 4 },
  budgetLeft: 100,
  ...over,
});
/** How often each option wins over 200 seeds. */
const shares = (inp: AdaptiveInput) => {
  const n: Record<string, number> = { siblings: 0, resample: 0, none: 0 };
  for (let seed = 0; seed < 200; seed++) n[chooseAdaptive(inp, createRng(seed)).option]!++;
  return n;
};

describe("chooseAdaptive on hand-made posteriors", () => {
  it("rescues under the siblings when their posterior is far above H0's resample posterior, all rollouts to the sure best", () => {
    // Prepare: a sibling that rescued 14 of 18, one that rescued 1 of 20; H0 resamples found 0 of 19
    const inp = input([beta("sib-a", 15, 5), beta("sib-b", 2, 20)], [1, 20]);
    // Act
    const choice = chooseAdaptive(inp, createRng(1));
    // Assess: siblings, both rollouts under sib-a, the estimates recorded per option
    expect(choice).toMatchObject({ option: "siblings", reason: "best-draw", allocation: { "sib-a": 2 }, spend: 2 });
    expect(choice.estimates.map((e) => e.id)).toEqual(["sib-a", "sib-b", H0_OPTION]);
    expect(choice.estimates[0]).toMatchObject({
      alpha: 15,
      beta: 5,
      mean: 0.75,
      cost: 2,
      expectedSuccesses: 1.5,
      affordable: true,
    });
    expect(choice.estimates[2]).toMatchObject({ cost: 4, mean: 1 / 21 });
    expect(shares(inp).siblings).toBeGreaterThanOrEqual(198);
  });

  it("resamples under H0 when H0's posterior is far above every sibling's", () => {
    const inp = input([beta("sib-a", 2, 20), beta("sib-b", 1, 15)], [15, 5]);
    const choice = chooseAdaptive(inp, createRng(1));
    expect(choice).toMatchObject({ option: "resample", reason: "best-draw", allocation: { [H0_OPTION]: 4 }, spend: 4 });
    expect(shares(inp).resample).toBeGreaterThanOrEqual(198);
  });

  it("compares success per rollout spent, not per option: H0 at 0.3 a rollout beats siblings at 0.1 though a resample spends twice the rollouts", () => {
    const inp = input([beta("sib-a", 101, 901)], [301, 701]);
    expect(shares(inp).resample).toBe(200);
  });

  it("spends nothing when every option's draw is below the floor, and only what the budget affords", () => {
    const hopeless = input([beta("sib-a", 1, 2000)], [1, 2000]);
    expect(chooseAdaptive(hopeless, createRng(3))).toMatchObject({
      option: "none",
      reason: "below-floor",
      allocation: {},
      spend: 0,
    });
    // Siblings are best but cost 2; with 1 rollout left nothing is affordable, with 3 only ... nothing either (H0 costs
    // 4)
    const good = [beta("sib-a", 15, 5)];
    expect(chooseAdaptive(input(good, [1, 20], { budgetLeft: 1 }), createRng(3))).toMatchObject({
      option: "none",
      reason: "budget",
    });
    // With 4 left but siblings costing 6, H0 is the only affordable option and is taken
    expect(
      chooseAdaptive(input(good, [2, 8], { budgetLeft: 4, cost: { siblings: 6, resample: 4 } }), createRng(3)),
    ).toMatchObject({ option: "resample" });
    // No siblings routed: only H0 is open
    expect(chooseAdaptive(input([], [5, 5]), createRng(3)).option).toBe("resample");
  });

  it("explores: with close posteriors neither option starves", () => {
    const n = shares(input([beta("sib-a", 4, 6)], [3, 7]));
    expect(n.siblings).toBeGreaterThan(40);
    expect(n.resample).toBeGreaterThan(40);
  });

  it("splits a rescue's rollouts by probability matching: over uncertain siblings across them, over a sure best to it alone", () => {
    const split = (sibs: OptionPosterior[]) =>
      Array.from({ length: 100 }, (_, seed) =>
        chooseAdaptive(input(sibs, [1, 50], { cost: { siblings: 4, resample: 4 } }), createRng(seed)),
      ).filter((c) => c.option === "siblings");
    const uncertain = split([beta("sib-a", 2, 2), beta("sib-b", 2, 2)]);
    expect(uncertain.some((c) => Object.keys(c.allocation).length === 2)).toBe(true);
    for (const c of uncertain) expect(Object.values(c.allocation).reduce((a, b) => a + b, 0)).toBe(4);
    const sure = split([beta("sib-a", 200, 20), beta("sib-b", 20, 200)]);
    expect(sure.length).toBe(100);
    for (const c of sure) expect(c.allocation).toEqual({ "sib-a": 4 });
  });

  it("is deterministic given the Rng", () => {
    const inp = input([beta("sib-a", 3, 4), beta("sib-b", 4, 3)], [2, 5]);
    expect(chooseAdaptive(inp, createRng(42))).toEqual(chooseAdaptive(inp, createRng(42)));
  });
});

describe("the adaptive mode's posteriors", () => {
  it("caps an option's evidence at ADAPTIVE.evidenceCap pseudo-rollouts (hand-computed: 10 of 40 → Beta(6, 16))", () => {
    expect(ADAPTIVE.evidenceCap).toBe(20);
    expect(cappedPosterior("x", { attempts: 40, successes: 10 })).toEqual({ id: "x", alpha: 6, beta: 16 });
    expect(cappedPosterior("x", { attempts: 5, successes: 2 })).toEqual({ id: "x", alpha: 3, beta: 4 });
    expect(cappedPosterior("x", { attempts: 0, successes: 0 })).toEqual({ id: "x", alpha: 1, beta: 1 });
  });

  it("reads a sibling's rescues of this family under the failure tags, else of the family, else all of them", () => {
    const p = makeProfile("s", {
      byFailureTag: {
        "app/unauthorized": { attempts: 4, successes: 3 },
        "app/timeout": { attempts: 2, successes: 0 },
        "db/x": { attempts: 10, successes: 1 },
      },
    });
    expect(siblingEvidence(p, "app", ["unauthorized", "timeout"])).toEqual({ attempts: 6, successes: 3 });
    expect(siblingEvidence(p, "app", ["other"])).toEqual({ attempts: 6, successes: 3 });
    expect(siblingEvidence(p, "web", ["other"])).toEqual({ attempts: 16, successes: 4 });
    expect(siblingEvidence(undefined, "app", [])).toEqual({ attempts: 0, successes: 0 });
  });

  it("draws Beta variates with the right mean", () => {
    const rng = createRng(9);
    const draws = Array.from({ length: 4000 }, () => betaDraw(2, 6, rng));
    expect(draws.reduce((a, b) => a + b, 0) / draws.length).toBeCloseTo(0.25, 1);
    expect(draws.every((d) => d >= 0 && d <= 1)).toBe(true);
  });
});

const setup = embeddedSetup(defaultEmbeddedSettings);
const instance = await setup.instance(1);

describe("the harness-s-adaptive arm", () => {
  const small = TrainConfig.parse({
    steps: 4,
    batchSize: 8,
    curveEvery: 0,
    reanchorEvery: 2,
    reanchorBudget: 12,
    auditEvery: 0,
    rescueRollouts: 2,
  });

  it("is registered budget-matched and off the default list", () => {
    expect(armConfig("harness-s-adaptive", 30, "v")).toMatchObject({
      rescue: "adaptive",
      reanchor: true,
      extraBudget: 30,
    });
    expect(ExperimentConfig.parse({}).arms).not.toContain("harness-s-adaptive");
  });

  it("spends at most its extra budget (rescues, resamples and re-anchoring together) and records every choice with its estimates", async () => {
    for (const extra of [0, 20, 60]) {
      const records: StepRecord[] = [];
      const deps = {
        ...makeTrainDeps(setup, instance, setup.createPolicy(1), 1),
        onStep: (_s: number, r: StepRecord) => records.push(r),
      };
      const r = await trainArm(
        ArmConfig.parse({ name: "harness-s-adaptive", rescue: "adaptive", extraBudget: extra }),
        small,
        deps,
      );
      const extraSpent = r.rollouts.rescue + r.rollouts.resample + r.rollouts.reanchor;
      expect(extraSpent).toBeLessThanOrEqual(extra);
      const allFail = records.flatMap((rec) => rec.groups.filter((g) => g.allFail));
      expect(allFail.length).toBe(r.rescue.allFailGroups);
      for (const g of allFail) expect(g.adaptive).toBeDefined();
      const spent = allFail.reduce((s, g) => s + g.adaptive!.spend, 0);
      expect(spent).toBe(r.rollouts.rescue + r.rollouts.resample);
      expect(r.adaptiveResamples.attempts).toBe(r.rollouts.resample);
      const sib = allFail.filter((g) => g.adaptive!.option === "siblings");
      expect(sib.length).toBe(r.rescue.triggered);
      for (const g of sib) expect(Object.keys(g.adaptive!.allocation).sort()).toEqual([...g.chosen!].sort());
      if (extra === 0) expect(allFail.every((g) => g.adaptive!.option === "none")).toBe(true);
      if (extra === 60) expect(allFail.some((g) => g.adaptive!.option !== "none")).toBe(true);
    }
  });
});
