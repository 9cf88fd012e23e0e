import { describe, expect, it } from "vitest";
import type { PolicyObservation, UpdateSettings } from "@harness-s/core";
import { CONTEXT_WEIGHT_BOUND, contextWeights } from "@harness-s/core";
import { TrainConfig, trainArm, updateSettings } from "@harness-s/core/training";
import { armConfig, ExperimentConfig } from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";
import { makeRollout, makeTrainDeps } from "../factories.ts";

describe('the importance correction for rescueContext "base"', () => {
  it("weights each token by π(y | H0 context) / π(y | sampled context), truncated at CONTEXT_WEIGHT_BOUND (hand-computed)", () => {
    expect(CONTEXT_WEIGHT_BOUND).toBe(2);
    // 0.2 / 0.4 = 0.5; 0.3 / 0.3 = 1; 0.9 / 0.3 = 3 → truncated to 2
    const w = contextWeights(
      "truncated-is",
      [Math.log(0.2), Math.log(0.3), Math.log(0.9)],
      [Math.log(0.4), Math.log(0.3), Math.log(0.3)],
    );
    expect(w[0]).toBeCloseTo(0.5, 12);
    expect(w[1]).toBeCloseTo(1, 12);
    expect(w[2]).toBe(2);
    expect(contextWeights("none", [Math.log(0.2)], [Math.log(0.4)])).toEqual([1]);
  });

  it("is a training setting, none unless chosen, and reaches the update's settings", () => {
    expect(updateSettings(TrainConfig.parse({})).rescueCorrection).toBe("none");
    expect(
      updateSettings(TrainConfig.parse({ rescueContext: "base", rescueCorrection: "truncated-is" })),
    ).toMatchObject({ rescueCorrection: "truncated-is" });
    expect(() => TrainConfig.parse({ rescueCorrection: "other" })).toThrow();
  });

  describe("in the embedded policy's update (cue strength 2, one epoch, advantage 1)", () => {
    const obs = (hints: string[]): PolicyObservation => ({
      family: "app",
      tools: ["list_items", "next_page", "submit"],
      event: "e",
      facts: [],
      taskTags: [],
      hints,
      baseHints: [],
      failedActions: [],
      turnsLeft: 5,
    });
    const loss = async (hints: string[], rescueCorrection: UpdateSettings["rescueCorrection"]) => {
      const p = new LogLinearPolicy({ cueStrength: 2 });
      const o = obs(hints);
      const step = {
        action: "next_page",
        logProb: Math.log(p.probabilities(o)[1]!),
        forced: false,
        intercepted: false,
        result: "x",
        observation: o,
      };
      const settings: UpdateSettings = {
        learningRate: 0.1,
        clipEpsilon: 0.2,
        klCoef: 0,
        epochs: 1,
        rescueContext: "base",
        maskIntercepted: true,
        rescueCorrection,
      };
      const r = await p.update({
        baseVersion: 0,
        samples: [{ rollout: makeRollout({ steps: [step] }), advantage: 1 }],
        settings,
      });
      return r.metrics.loss;
    };

    it("rebases the ratio at H0's context and weights the advantage: loss −w, w = (1/3) / (e²/(e²+2)) below the bound", async () => {
      const e2 = Math.exp(2);
      expect(await loss(["next_page"], "truncated-is")).toBeCloseTo(-(e2 + 2) / (3 * e2), 10);
    });

    it("truncates a weight above the bound (w = (1/3) / (1/(e²+2)) ≈ 3.13 → 2), where without correction the PPO clip caps the ratio at 1.2", async () => {
      expect(await loss(["submit"], "truncated-is")).toBeCloseTo(-2, 10);
      expect(await loss(["submit"], "none")).toBeCloseTo(-1.2, 10);
    });
  });
});

describe("the harness-s-base-corrected arm", () => {
  it("is harness-s with rescued rows trained in H0's context under the truncated-is correction, named where it runs", async () => {
    // Prepare: the arm's trainer config, and a policy that records the settings of each update
    const arm = armConfig("harness-s-base-corrected", 0, "v");
    expect(arm).toMatchObject({
      rescue: "router",
      reanchor: true,
      update: { rescueContext: "base", rescueCorrection: "truncated-is" },
    });
    expect(ExperimentConfig.parse({}).arms).not.toContain("harness-s-base-corrected");
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const deps = makeTrainDeps(setup, await setup.instance(1), setup.createPolicy(1), 1);
    const inner = deps.policy;
    const seen: UpdateSettings[] = [];
    deps.policy = {
      version: () => inner.version(),
      act: (o, r) => inner.act(o, r),
      update: (b) => {
        seen.push(b.settings);
        return inner.update(b);
      },
    };
    // Act
    await trainArm(arm, TrainConfig.parse({ steps: 2, batchSize: 4, curveEvery: 0, auditEvery: 0 }), deps);
    // Assess
    expect(seen.length).toBeGreaterThan(0);
    for (const s of seen) expect(s).toMatchObject({ rescueContext: "base", rescueCorrection: "truncated-is" });
  });
});
