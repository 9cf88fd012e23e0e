import type { ExperimentSummary } from "@harness-s/core/experiment";
import { interval, pts, reportLines, signed, type ReportExtras as SharedExtras } from "@harness-s/adapters/report";
import type { SweepResult } from "../sweep.ts";
import { renderPairedSweep } from "./paired-sweeps.ts";
import type { PairedSweep } from "../sweeps.ts";

/** What a report adds to the summary when the run has it. */
export interface ReportExtras extends SharedExtras {
  pairedSweeps?: readonly PairedSweep[];
}

/**
 * The experiment report: the report every run gets (`@harness-s/adapters/report`, the service's
 * too), then the CLI's sweeps when it ran them.
 */
export function renderReport(s: ExperimentSummary, sweep?: SweepResult, extras: ReportExtras = {}): string {
  const out = reportLines(s, extras);
  if (sweep) out.push(...renderSweep(sweep));
  for (const p of extras.pairedSweeps ?? []) out.push(...renderPairedSweep(p));
  return out.join("\n");
}

function renderSweep(sweep: SweepResult): string[] {
  const out = ["## Sensitivity: where rescue pays", "", sweep.note, ""];
  out.push(
    "| axis | value | harness-s − grpo-budget, train Avg@3 | held-out Avg@3 | held-out 95% CI | seeds better (held-out) |",
    "|---|---|---|---|---|---|",
  );
  for (const p of sweep.points)
    out.push(
      `| ${p.axis} | ${p.value} | ${signed(p.train.mean)} ± ${pts(p.train.std)} | ${signed(p.heldout.mean)} ± ${pts(p.heldout.std)} | ${interval(p.heldout.ci95)} | ${p.heldout.wins}/${p.heldout.n} |`,
    );
  out.push("", "![Sweep](sweep.png)", "", sweep.conclusion, "");
  return out;
}
