import { describe, expect, it } from "vitest";
import { renderReport } from "../../packages/cli/src/report/markdown.ts";
import { makeArmSeed, makeSummary } from "../factories.ts";

const summary = (protocol?: string) => {
  const runs = [1, 2].map((seed) => makeArmSeed(seed, { app: 0.5 }));
  const s = makeSummary({ grpo: runs, "grpo-budget": runs, "harness-s": runs });
  return protocol ? { ...s, config: { protocol } } : s;
};

describe("report labels the protocol", () => {
  it("says at the top that a validation run's held-out figures are the validation split", () => {
    // Act
    const report = renderReport(summary("validation"));
    // Assess
    const banner = report.split("\n").find((l) => l.startsWith("> "));
    expect(banner).toContain("VALIDATION protocol");
    expect(banner).toContain("test held-out tasks were never built");
  });

  it("adds nothing to a test run's report", () => {
    expect(renderReport(summary("test"))).not.toContain("VALIDATION");
    expect(renderReport(summary())).not.toContain("VALIDATION");
  });
});
