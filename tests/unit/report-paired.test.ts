import { describe, expect, it } from "vitest";
import { pairedSummary } from "@harness-s/core/metrics";
import { renderReport } from "../../packages/cli/src/report/markdown.ts";
import { makeArmSeed, makeSummary } from "../factories.ts";

describe("report: paired differences", () => {
  it("give the 95% interval and the sign test beside mean ± std, and call an ablation noise when the interval holds 0", () => {
    // Prepare: harness-s 0.1 above grpo-budget on every seed; the random ablation ±0.05 around harness-s
    const seeds = [1, 2, 3, 4, 5];
    const runs = (score: (seed: number) => number) => seeds.map((seed) => makeArmSeed(seed, { app: score(seed) }));
    const s = makeSummary({
      grpo: runs(() => 0.5),
      "grpo-budget": runs((seed) => 0.5 + seed / 100),
      "harness-s": runs((seed) => 0.6 + seed / 100),
      "harness-s-random": runs((seed) => 0.6 + seed / 100 + (seed % 2 ? 0.05 : -0.05)),
    });
    // Act
    const report = renderReport(s);
    // Assess
    const vsBudget = report.split("\n").find((l) => l.startsWith("| harness-s − grpo-budget"))!;
    expect(vsBudget).toContain("+10.0 ± 0.0 (5/5 seeds better; 95% CI +10.0 to +10.0; sign test p = 0.063;");
    expect(report).toMatch(/\*\*harness-s-random\*\* asks [^\n]*train \+1\.0 \(within seed noise, 3\/5 seeds better\)/);
  });

  it("the sweep table gives each held-out advantage its 95% interval", () => {
    const point = (diffs: number[]) => ({ ...pairedSummary(diffs), diffs });
    const sweep = {
      points: [{ axis: "cueRate" as const, value: 0, train: point([0.2, 0.2, 0.2]), heldout: point([0.4, 0.5, 0.6]) }],
      note: "note",
      conclusion: "conclusion",
    };
    const report = renderReport(makeSummary({ "harness-s": [makeArmSeed(1, { app: 1 })] }), sweep);
    expect(report).toContain(
      "| axis | value | harness-s − grpo-budget, train Avg@3 | held-out Avg@3 | held-out 95% CI | seeds better (held-out) |",
    );
    expect(report).toContain("| cueRate | 0 | +20.0 ± 0.0 | +50.0 ± 10.0 | +25.2 to +74.8 | 3/3 |");
  });
});
