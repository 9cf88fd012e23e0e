import { describe, expect, it } from "vitest";
import { ARM_COLORS, armColor } from "@harness-s/core/arm-colors";
import { hasUtilityCurve, lineChart, renderReport } from "@harness-s/adapters/report";
import { DAY_S, everyDay, xRange, yRange } from "../../console/src/axes.ts";
import { makeArmSeed, makeSummary } from "../factories.ts";

// Issue 70, item 4: every chart with true axes and units, one colour per arm everywhere (the console's charts and the
// report's PNGs read the same `armColor`), and short runs drawn honestly (no degenerate axis, no utilities "curve" of
// one step, no conclusion the figures do not support). The console's axes are pure functions (console/src/axes.ts);
// the browser test (tests/integration/console.test.ts) checks what the pages draw with them.
describe("the console's axes", () => {
  it("a usage chart's day axis spans the whole period asked for, one day of usage or fourteen", () => {
    const days = everyDay("2026-11-24", "2026-12-07");
    expect(days).toHaveLength(14);
    expect([days[0], days.at(-1)]).toEqual(["2026-11-24", "2026-12-07"]);
    const [from, to] = [Date.parse("2026-11-24T00:00:00Z") / 1000, Date.parse("2026-12-07T00:00:00Z") / 1000];
    const oneDayOfUsage = to; // data at the last day only
    expect(xRange({ kind: "day", from, to }, oneDayOfUsage, oneDayOfUsage)).toEqual([from - DAY_S / 2, to + DAY_S / 2]);
  });

  it("a single training step gets room on both sides; y starts at zero (1 when every value is 0)", () => {
    expect(xRange({ kind: "step" }, 1, 1)).toEqual([0, 2]);
    expect(xRange({ kind: "step" }, 0, 4)).toEqual([0, 4]);
    expect(yRange(0.17)).toEqual([0, 0.17 * 1.1]);
    expect(yRange(0)).toEqual([0, 1]);
    expect(yRange(null)).toEqual([0, 1]);
  });
});

describe("the report's plots and words", () => {
  const rows = [
    { arm: "grpo", step: 1, avg: 50 },
    { arm: "harness-s", step: 1, avg: 66.7 },
  ];

  it("colour each arm as the console does, and count steps in whole numbers; one step is not a degenerate axis", () => {
    const spec = lineChart("t", rows, "step", "avg", "arm", "H0 Avg@3 (%)", true, armColor) as unknown as {
      layer: { encoding: { x: { axis: unknown; scale?: unknown }; color: { scale: unknown } } }[];
    };
    for (const layer of spec.layer) {
      expect(layer.encoding.color.scale).toEqual({
        domain: ["grpo", "harness-s"],
        range: [ARM_COLORS.grpo, ARM_COLORS["harness-s"]],
      });
      expect(layer.encoding.x.axis).toEqual({ tickMinStep: 1, format: "d" });
      expect(layer.encoding.x.scale).toEqual({ domain: [0, 2] });
    }
    expect(new Set(Object.values(ARM_COLORS)).size).toBe(Object.keys(ARM_COLORS).length);
    expect(armColor("a-study-arm")).toBe(armColor("a-study-arm"));
  });

  it("a run whose utilities were measured at one step has no utilities plot, and its report says why", () => {
    const seed = makeArmSeed(1, { app: 0 }, {});
    const oneStep = { ...seed, siblingDirections: { s1: "recovery" }, utilities: [{ step: 0, values: { s1: 0.5 } }] };
    const twoSteps = { ...oneStep, utilities: [...oneStep.utilities, { step: 2, values: { s1: 0.25 } }] };
    const short = makeSummary({ "harness-s": [oneStep] });
    expect(hasUtilityCurve(short)).toBe(false);
    expect(hasUtilityCurve(makeSummary({ "harness-s": [twoSteps] }))).toBe(true);
    const md = renderReport(short);
    expect(md).not.toContain("(utilities.png)");
    expect(md).toContain("No utilities plot: the siblings' utilities were measured at one step only");
  });

  it("with Rank-1 and H0 both at 0 before and after, the report claims nothing moved into the policy", () => {
    const zero = { passAt3: 0, avgAt3: 0 };
    const summary = makeSummary({ "harness-s": [makeArmSeed(1, { app: 0 }, {})] });
    const hs = { ...summary.arms[0]!, rank1: { before: { heldout: zero }, after: { heldout: zero } } };
    const md = renderReport({ ...summary, arms: [hs] } as typeof summary);
    expect(md).toContain("## Rank-1 inference");
    expect(md).not.toContain("the behaviour the siblings elicited moved");
    expect(md).toMatch(/say nothing about what moved into the policy|no sign here/);
  });
});
