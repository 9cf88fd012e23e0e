import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ExperimentSummary } from "@harness-s/core/experiment";
import { acceptanceChecks, panels, protocolNote, pts, renderPng, summaryPlots } from "@harness-s/adapters/report";
import type { SweepResult } from "../sweep.ts";
import { pairedSweepPlot } from "./paired-sweeps.ts";
import type { PairedSweep } from "../sweeps.ts";

/** curves.png, utilities.png and, with sweeps, sweep.png and sweep-<kind>.png in `dir`. */
export async function writePlots(
  dir: string,
  s: ExperimentSummary,
  sweep?: SweepResult,
  pairedSweeps: readonly PairedSweep[] = [],
): Promise<void> {
  for (const p of pairedSweeps) await writeFile(join(dir, `sweep-${p.kind}.png`), await renderPng(pairedSweepPlot(p)));
  for (const p of await summaryPlots(s)) await writeFile(join(dir, p.name), p.png);
  if (sweep) {
    const rowsFor = (axis: string) =>
      sweep.points
        .filter((p) => p.axis === axis)
        .flatMap((p) => [
          ...p.heldout.diffs.map((d) => ({ split: "held-out", value: p.value, advantage: d })),
          ...p.train.diffs.map((d) => ({ split: "train", value: p.value, advantage: d })),
        ]);
    const spec = panels("harness-s − grpo-budget, H0 Avg@3 (mean ± std over seeds)", [
      {
        title: "H0 cue rate on train tasks",
        rows: rowsFor("cueRate"),
        x: "value",
        y: "advantage",
        color: "split",
        yTitle: "advantage",
      },
      {
        title: "cue strength (fixed prior)",
        rows: rowsFor("cueStrength"),
        x: "value",
        y: "advantage",
        color: "split",
        yTitle: "advantage",
      },
    ]);
    await writeFile(join(dir, "sweep.png"), await renderPng(spec));
  }
}

/** The result table and the acceptance figures, on stdout. */
export function printTable(s: ExperimentSummary, seconds: number, dir: string): void {
  const rows = s.arms.map((a) => [
    a.name,
    a.rollouts.toFixed(0),
    pts(a.h0.train.avgAt3),
    pts(a.h0.train.passAt3),
    pts(a.h0.heldout.avgAt3),
    pts(a.h0.heldout.passAt3),
  ]);
  const header = ["arm", "rollouts", "train Avg@3", "train Pass@3", "held Avg@3", "held Pass@3"];
  const note = protocolNote(s);
  if (note) console.log(`${note}\n`);
  const all = [
    header,
    [
      "initial",
      "-",
      pts(s.initial.train.avgAt3),
      pts(s.initial.train.passAt3),
      pts(s.initial.heldout.avgAt3),
      pts(s.initial.heldout.passAt3),
    ],
    ...rows,
  ];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  for (const r of all) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join("  "));
  console.log("");
  for (const c of acceptanceChecks(s)) console.log(`${c.pass ? "PASS" : "FAIL"}  ${c.name}: ${c.detail}`);
  console.log(`\n${seconds.toFixed(1)} s; summary.json, report.md and plots in ${dir}`);
}
