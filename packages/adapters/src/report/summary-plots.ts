import type { ExperimentSummary } from "@harness-s/core/experiment";
import { lineChart, renderPng } from "./plots.ts";

/**
 * The plots every run gets, as PNG bytes by file name: `curves.png` (H0 Avg@3 on train over
 * training, each arm mean ± std over seeds) and `utilities.png` (rescue utility by repair
 * direction over harness-s training). The CLI adds its sweeps' plots.
 */
export async function summaryPlots(
  s: ExperimentSummary,
): Promise<{ name: "curves.png" | "utilities.png"; png: Buffer }[]> {
  const curves = s.arms.flatMap((a) =>
    a.perSeed.flatMap((p) => p.curve.map((c) => ({ arm: a.name, seed: p.seed, step: c.step, avg: c.h0TrainAvgAt3 }))),
  );
  const hs = s.arms.find((a) => a.name === "harness-s");
  const utilRows = (hs?.perSeed ?? []).flatMap((p) =>
    p.utilities.flatMap((u) =>
      Object.entries(u.values)
        .filter(([id, v]) => v !== null && p.siblingDirections[id])
        .map(([id, v]) => ({ direction: p.siblingDirections[id], step: u.step, utility: v })),
    ),
  );
  return [
    {
      name: "curves.png",
      png: await renderPng(
        lineChart(
          "H0 Avg@3 on train tasks over training (mean ± std over seeds)",
          curves,
          "step",
          "avg",
          "arm",
          "H0 Avg@3",
          true,
        ),
      ),
    },
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
