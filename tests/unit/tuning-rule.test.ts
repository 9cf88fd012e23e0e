import { describe, expect, it } from "vitest";
import type { ExperimentSummary } from "@harness-s/core/experiment";
import { TuningRule, decide, renderTuning, tuningRows } from "../../packages/cli/src/tuning/rule.ts";
import { makeArmSeed, makeSummary } from "../factories.ts";

const rule = TuningRule.parse({});
const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

/** A validation run where harness-s scores `hs(seed)` (train `train`), the baselines 0.5. */
function run(hs: (seed: number) => number, opts: { train?: number; rollouts?: number } = {}): ExperimentSummary {
  const base = SEEDS.map((seed) => makeArmSeed(seed, { app: 0.5 }));
  const harness = SEEDS.map((seed) => {
    const r = makeArmSeed(seed, { app: hs(seed) });
    return opts.train === undefined ? r : { ...r, h0: { ...r.h0, train: { passAt3: opts.train, avgAt3: opts.train } } };
  });
  const s = makeSummary({ grpo: base, "grpo-budget": base, "harness-s": harness });
  return {
    ...s,
    arms: s.arms.map((a) => (a.name === "harness-s" && opts.rollouts ? { ...a, rollouts: opts.rollouts } : a)),
  };
}

const rowsFor = (candidates: Record<string, ExperimentSummary>) =>
  tuningRows(
    new Map([["default", run(() => 0.6, { train: 0.9 })], ...Object.entries(candidates)]),
    Object.fromEntries(Object.keys(candidates).map((k) => [k, { k: 3 }])),
    rule,
  );

describe("tuning rule", () => {
  it("adopts a candidate better by enough in enough seeds, the best of several", () => {
    // Prepare: +5 points in 8/10 seeds, −1 in 2; and +3 points in every seed
    const often = run((seed) => (seed <= 8 ? 0.65 : 0.59), { train: 0.9 });
    const always = run(() => 0.63, { train: 0.9 });
    // Act
    const rows = rowsFor({ often, always });
    // Assess
    expect(rows.map((r) => [r.name, r.qualifies])).toEqual([
      ["default", false],
      ["often", true],
      ["always", true],
    ]);
    expect(decide(rows)?.name).toBe("often");
    expect(rows[1]!.vsDefault).toMatchObject({ wins: 8, n: 10 });
  });

  it("refuses a large mean carried by few seeds, a small gain, a train loss and a costlier rescue", () => {
    const few = run((seed) => (seed <= 6 ? 0.9 : 0.55), { train: 0.9 });
    const small = run(() => 0.61, { train: 0.9 });
    const trainLoss = run(() => 0.7, { train: 0.85 });
    const costly = run(() => 0.7, { train: 0.9, rollouts: 140 });
    const rows = rowsFor({ few, small, trainLoss, costly });
    expect(rows.every((r) => !r.qualifies)).toBe(true);
    expect(decide(rows)).toBeUndefined();
    expect(renderTuning(rows, SEEDS, rule)).toContain("Decision: keep the defaults");
  });

  it("reports the candidate's lead over grpo-budget without using it", () => {
    const rows = rowsFor({ same: run(() => 0.6, { train: 0.9 }) });
    expect(rows[1]!.vsBudget.mean).toBeCloseTo(0.1);
    expect(rows[1]!.qualifies).toBe(false);
  });

  it("scores a baseline's own validation Avg@3 when the objective is that baseline", () => {
    // Prepare: harness-s gains 10 points in every seed, grpo-budget loses 5 in every seed
    const budgetOf = (score: number) => {
      const s = run(() => 0.7, { train: 0.9 });
      return {
        ...s,
        arms: s.arms.map((a) =>
          a.name === "grpo-budget"
            ? {
                ...a,
                h0: { ...a.h0, heldout: { passAt3: score, avgAt3: score } },
                perSeed: a.perSeed.map((r) => ({ ...r, h0: { ...r.h0, heldout: { passAt3: score, avgAt3: score } } })),
              }
            : a,
        ),
      };
    };
    const byBudget = TuningRule.parse({ objective: "grpo-budget" });
    const runs = new Map([
      ["default", run(() => 0.6, { train: 0.9 })],
      ["worse-for-baseline", budgetOf(0.45)],
      ["better-for-baseline", budgetOf(0.55)],
    ]);
    // Act
    const rows = tuningRows(runs, { "worse-for-baseline": { k: 3 }, "better-for-baseline": { k: 1 } }, byBudget);
    // Assess
    expect(rows.map((r) => [r.name, r.qualifies])).toEqual([
      ["default", false],
      ["worse-for-baseline", false],
      ["better-for-baseline", true],
    ]);
    expect(rows[1]!.vsDefault).toMatchObject({ wins: 0, n: 10 });
    expect(rows[1]!.validation).toBeCloseTo(0.45);
    expect(renderTuning(rows, SEEDS, byBudget)).toContain("| candidate | grpo-budget validation Avg@3 |");
    expect(() => TuningRule.parse({ objective: "harness-s-random" })).toThrow();
  });
});
