import { describe, expect, it } from "vitest";
import {
  ExperimentConfig,
  ExperimentRequest,
  armNames,
  registerArm,
  runExperimentToEnd,
} from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { ExperimentFlags } from "../../packages/cli/src/declared/experiment.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const small = {
  seeds: [11],
  train: { steps: 4, batchSize: 8, curveEvery: 0, reanchorEvery: 2, reanchorBudget: 8 },
  evalSamples: 3,
  evalTasks: 6,
};

describe("experiment arms as a registry", () => {
  it("a seventh arm registered here runs through the experiment, the CLI flags and the API with nothing else touched", async () => {
    // Prepare: an arm that rescues by the router and re-anchors, without Rank-1 evaluation.
    registerArm({ name: "router-no-rank1", rescue: "router", reanchor: true });

    // Act
    const summary = await runExperimentToEnd(
      ExperimentConfig.parse({ ...small, arms: ["grpo", "harness-s", "router-no-rank1"] }),
      setup,
    );
    const flags = ExperimentFlags.shape.arms.safeParse("grpo,router-no-rank1");
    const request = ExperimentRequest.safeParse({ arms: ["router-no-rank1"], seeds: [1], budget: { rollouts: 1_000 } });

    // Assess
    expect(armNames()).toContain("router-no-rank1");
    const added = summary.arms.find((a) => a.name === "router-no-rank1")!;
    const seed = added.perSeed[0]!;
    expect(seed.rescue.triggered).toBeGreaterThan(0);
    expect(seed.rolloutBreakdown.rescue).toBeGreaterThan(0);
    expect(seed.rolloutBreakdown.reanchor).toBeGreaterThan(0);
    expect(seed.rank1).toBeUndefined();
    expect(added.rank1).toBeUndefined();
    expect(summary.arms.find((a) => a.name === "harness-s")!.rank1).toBeDefined();
    expect(flags.data).toEqual(["grpo", "router-no-rank1"]);
    expect(request.success).toBe(true);
  }, 120_000);

  it("an unknown arm's error lists the known ones; a budget-matched arm needs its source; a name is registered once", () => {
    const unknown = ExperimentConfig.safeParse({ arms: ["grpo", "nope"] });
    expect(unknown.success).toBe(false);
    expect(unknown.error!.issues[0]!.message).toMatch(
      /unknown arm "nope" \(known arms: grpo, grpo-budget, harness-s, harness-s-random/,
    );

    const alone = ExperimentConfig.safeParse({ arms: ["grpo-budget"] });
    expect(alone.error!.issues[0]!.message).toMatch(
      /grpo-budget gets harness-s's extra rollouts: run it with harness-s/,
    );

    expect(() => registerArm({ name: "grpo", rescue: "none" })).toThrow(/already registered/);
    expect(() => registerArm({ name: "second-source", rescue: "router", budget: "budget-source" })).toThrow(
      /only one arm can be the budget source/,
    );
  });

  it("grpo-budget gets exactly the rescue and re-anchoring rollouts harness-s spent on the seed", async () => {
    const summary = await runExperimentToEnd(
      ExperimentConfig.parse({ ...small, arms: ["grpo-budget", "grpo", "harness-s"] }),
      setup,
    );
    const hs = summary.arms.find((a) => a.name === "harness-s")!.perSeed[0]!;
    const gb = summary.arms.find((a) => a.name === "grpo-budget")!.perSeed[0]!;
    const grpo = summary.arms.find((a) => a.name === "grpo")!.perSeed[0]!;
    expect(hs.rolloutBreakdown.rescue + hs.rolloutBreakdown.reanchor).toBeGreaterThan(0);
    expect(gb.rolloutBreakdown.resample).toBeLessThanOrEqual(hs.rolloutBreakdown.rescue + hs.rolloutBreakdown.reanchor);
    expect(gb.rolloutBreakdown.resample).toBeGreaterThan(0);
    expect(grpo.rolloutBreakdown.resample + grpo.rolloutBreakdown.rescue + grpo.rolloutBreakdown.reanchor).toBe(0);
  }, 120_000);
});
