import { describe, expect, it } from "vitest";
import { acceptanceChecks } from "@harness-s/adapters/report";
import { makeArmSeed, makeSummary } from "../factories.ts";

/** harness-s at 0.9 on every seed; both baselines at 0.5 except on `lossSeeds`, where they reach 1.0. */
function summaryWithLosses(seeds: number, lossSeeds: number) {
  const runs = (score: (seed: number) => number) =>
    Array.from({ length: seeds }, (_, i) => makeArmSeed(i + 1, { app: score(i + 1) }));
  const baseline = (seed: number) => (seed <= lossSeeds ? 1 : 0.5);
  return makeSummary({ grpo: runs(baseline), "grpo-budget": runs(baseline), "harness-s": runs(() => 0.9) });
}

const heldoutVsBudget = (s: ReturnType<typeof summaryWithLosses>) =>
  acceptanceChecks(s).find((c) => c.name === "harness-s − grpo-budget on H0 heldout.avgAt3")!;

describe("acceptance figures", () => {
  it("asks for 4 of 5 seeds better, and the same 80% share when more seeds are run", () => {
    expect(heldoutVsBudget(summaryWithLosses(5, 1))).toMatchObject({ pass: true });
    expect(heldoutVsBudget(summaryWithLosses(5, 2)).pass).toBe(false);
    const twenty = heldoutVsBudget(summaryWithLosses(20, 5));
    expect(twenty.pass).toBe(false);
    expect(twenty.detail).toContain("better in 15/20 seeds (needs ≥ +5.0 and ≥ 16/20)");
    expect(heldoutVsBudget(summaryWithLosses(20, 4)).pass).toBe(true);
  });

  it("fails a mean gain under 5 points even when every seed is better", () => {
    const runs = (score: number) => [1, 2, 3, 4, 5].map((seed) => makeArmSeed(seed, { app: score }));
    const s = makeSummary({ grpo: runs(0.5), "grpo-budget": runs(0.87), "harness-s": runs(0.9) });
    expect(heldoutVsBudget(s)).toMatchObject({ pass: false });
  });
});
