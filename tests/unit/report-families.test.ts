import { describe, expect, it } from "vitest";
import { ExperimentSummary } from "@harness-s/core/experiment";
import { byFamily, pairedByGroup, renderFamilies } from "@harness-s/adapters/report";
import { makeArmSeed, makeSummary } from "../factories.ts";

describe("held-out breakdown by task family", () => {
  const summary = makeSummary({
    "grpo-budget": [
      makeArmSeed(1, { app: 0.5, db: 0.9 }, { "db:schema": 1 }),
      makeArmSeed(2, { app: 0.4, db: 0.2 }, { "db:schema": 0.5 }),
    ],
    "harness-s": [
      makeArmSeed(1, { app: 0.7, db: 0.3 }, { "db:schema": 0 }),
      makeArmSeed(2, { app: 0.6, db: 0.8 }, { "db:schema": 1 }),
    ],
  });

  it("pairs the two arms seed by seed within one family", () => {
    // Prepare: the factory summary above. Act
    const budget = summary.arms[0]!;
    const hs = summary.arms[1]!;
    const app = pairedByGroup(hs, budget, byFamily, "app");
    const db = pairedByGroup(hs, budget, byFamily, "db");
    // Assess
    expect(app.diffs.map((d) => Number(d.toFixed(6)))).toEqual([0.2, 0.2]);
    expect(app.wins).toBe(2);
    expect(db.diffs.map((d) => Number(d.toFixed(6)))).toEqual([-0.6, 0.6]);
    expect(db.wins).toBe(1);
  });

  it("renders one row per arm and one paired row per family, from a schema-valid summary", () => {
    expect(() => ExperimentSummary.parse(summary)).not.toThrow();
    const md = renderFamilies(summary).join("\n");
    expect(md).toContain("| arm | app | db |");
    expect(md).toContain("| harness-s | 65.0 ± 7.1 | 55.0 ± 35.4 |");
    expect(md).toContain("| db | +0.0 ± 84.9 | 1/2 | -60.0, +60.0 |");
  });

  it("breaks held-out scores down by requirement combination, with the paired difference", () => {
    const md = renderFamilies(summary).join("\n");
    expect(md).toContain("| combination | grpo-budget | harness-s | harness-s − grpo-budget (seeds better) |");
    expect(md).toContain("| db:schema | 75.0 ± 35.4 | 50.0 ± 70.7 | -25.0 (1/2) |");
  });

  it("renders nothing without per-family results", () => {
    expect(renderFamilies(makeSummary({ "harness-s": [makeArmSeed(1, {})] }))).toEqual([]);
  });
});
