import { armColor, type ExperimentSummary } from "@harness-s/core/experiment";
import { lineChart, renderPng } from "./plots.ts";

/** harness-s's sibling utilities by repair direction and step, as `utilities.png` plots them. */
function utilityRows(s: ExperimentSummary) {
  const hs = s.arms.find((a) => a.name === "harness-s");
  return (hs?.perSeed ?? []).flatMap((p) =>
    p.utilities.flatMap((u) =>
      Object.entries(u.values)
        .filter(([id, v]) => v !== null && p.siblingDirections[id])
        .map(([id, v]) => ({ direction: p.siblingDirections[id], step: u.step, utility: v })),
    ),
  );
}

/** Whether a run has a utilities plot: utilities measured at two steps or more (re-anchoring ran). */
export const hasUtilityCurve = (s: ExperimentSummary): boolean => new Set(utilityRows(s).map((r) => r.step)).size >= 2;

/**
 * The plots every run gets, as PNG bytes by file name: `curves.png` (H0 Avg@3 on train over
 * training, in percent, each arm mean ± std over seeds, in its colour) and `utilities.png` (rescue utility by repair
 * direction over harness-s training; only once utilities were measured at two steps or more). The CLI adds its sweeps'
 * plots.
 */
export async function summaryPlots(
  s: ExperimentSummary,
): Promise<{ name: "curves.png" | "utilities.png"; png: Buffer }[]> {
  // H0 Avg@3 in percent, as the report's tables give it.
  const curves = s.arms.flatMap((a) =>
    a.perSeed.flatMap((p) =>
      p.curve.map((c) => ({ arm: a.name, seed: p.seed, step: c.step, avg: 100 * c.h0TrainAvgAt3 })),
    ),
  );
  const utilRows = utilityRows(s);
  // Utilities measured at one step only (no re-anchoring ran) make no curve: the plot is left out, and the report's
  // table of the evolution-time utilities says what there is.
  const curvesPng = {
    name: "curves.png" as const,
    png: await renderPng(
      lineChart(
        "H0 Avg@3 on train tasks over training (mean ± std over seeds)",
        curves,
        "step",
        "avg",
        "arm",
        "H0 Avg@3 (%)",
        true,
        armColor,
      ),
    ),
  };
  if (!hasUtilityCurve(s)) return [curvesPng];
  return [
    curvesPng,
    {
      name: "utilities.png",
      png: await renderPng(
        lineChart(
          "Rescue utility by repair direction over harness-s training (mean over seeds' siblings)",
          utilRows,
          "step",
          "utility",
          "direction",
          "rescue success rate",
        ),
      ),
    },
  ];
}
