import { mean } from "@harness-s/core/metrics";
import type { TopLevelSpec } from "vega-lite";
import { pointDiff, type PairedSweep, type PairedSweepPoint } from "../sweeps.ts";
import { interval, panels, pts, signed } from "@harness-s/adapters/report";

function diffCell(p: PairedSweepPoint, field: "train" | "heldout"): string {
  const d = pointDiff(p, field);
  return `${signed(d.mean)} (${interval(d.ci95)}; ${d.wins}/${d.n})`;
}

const excludesZero = (p: PairedSweepPoint, field: "train" | "heldout") => {
  const [lo, hi] = pointDiff(p, field).ci95;
  return lo > 0 ? 1 : hi < 0 ? -1 : 0;
};

/** Which points' held-out interval excludes 0, in words (a null result said as plainly as a win). */
export function sweepVerdict(sweep: PairedSweep): string {
  const [a, b] = sweep.arms;
  const wins = sweep.points.filter((p) => excludesZero(p, "heldout") > 0).map((p) => p.label);
  const losses = sweep.points.filter((p) => excludesZero(p, "heldout") < 0).map((p) => p.label);
  const trainWins = sweep.points.filter((p) => excludesZero(p, "train") > 0).map((p) => p.label);
  const parts = [
    wins.length
      ? `${a} beats ${b} on held-out (95% interval above 0) at: ${wins.join("; ")}.`
      : `At no point does the held-out 95% interval of ${a} − ${b} exclude 0 in ${a}'s favour.`,
    losses.length ? `${b} is better on held-out at: ${losses.join("; ")}.` : "",
    trainWins.length
      ? `On train the interval is above 0 at: ${trainWins.join("; ")}.`
      : `On train it is above 0 nowhere.`,
  ];
  return parts.filter(Boolean).join(" ");
}

/** The router or re-anchoring sweep as a report section. */
export function renderPairedSweep(sweep: PairedSweep): string[] {
  const [a, b] = sweep.arms;
  const title =
    sweep.kind === "router"
      ? "When the router pays: harness-s − harness-s-random"
      : "When re-anchoring pays: harness-s − harness-s-noreanchor";
  const out = [`## ${title}`, ""];
  if (sweep.protocol === "validation")
    out.push('> **VALIDATION protocol: "held-out" here is the held-back train pair.**', "");
  out.push(
    `Paired over seeds ${sweep.seeds.join(", ")} (${sweep.seeds.length}); each cell: mean ${a} − ${b} in H0 Avg@3 points (95% t interval; seeds where ${a} is better). Every point re-evolves the pool under its own suite setting; ${b} is ${a} with one thing changed (${sweep.kind === "router" ? "k random siblings instead of the vote" : "profiles never re-measured"}).`,
    "",
  );
  if (sweep.kind === "router") {
    out.push(
      "| side effects | pool asked (kept, mean) | k | sibling harm rate | train | held-out | rollouts a / b | groups replaced a / b |",
      "|---|---|---|---|---|---|---|---|",
    );
    for (const p of sweep.points) {
      const s = p.perSeed;
      out.push(
        `| ${p.params.sideEffects} | ${p.params.poolSize} (${mean(s.map((x) => x.poolSize)).toFixed(1)}) | ${p.params.k} | ${pts(mean(s.map((x) => x.harm)))} | ${diffCell(p, "train")} | ${diffCell(p, "heldout")} | ${mean(s.map((x) => x.a.rollouts)).toFixed(0)} / ${mean(s.map((x) => x.b.rollouts)).toFixed(0)} | ${mean(s.map((x) => x.a.replaced)).toFixed(1)} / ${mean(s.map((x) => x.b.replaced)).toFixed(1)} |`,
      );
    }
  } else {
    out.push(
      "| condition | nonstationarity | train | held-out | rollouts a / b | rescues triggered a / b |",
      "|---|---|---|---|---|---|",
    );
    for (const p of sweep.points) {
      const s = p.perSeed;
      out.push(
        `| ${p.label} | ${p.nonstationarity.toFixed(3)} | ${diffCell(p, "train")} | ${diffCell(p, "heldout")} | ${mean(s.map((x) => x.a.rollouts)).toFixed(0)} / ${mean(s.map((x) => x.b.rollouts)).toFixed(0)} | ${mean(s.map((x) => x.a.triggered)).toFixed(1)} / ${mean(s.map((x) => x.b.triggered)).toFixed(1)} |`,
      );
    }
  }
  out.push("", `![${title}](sweep-${sweep.kind}.png)`, "", sweepVerdict(sweep), "");
  return out;
}

/** The sweep's plot: the paired difference per point, train and held-out panels. */
export function pairedSweepPlot(sweep: PairedSweep): TopLevelSpec {
  const rows = (field: "train" | "heldout") =>
    sweep.points.flatMap((p) =>
      p.perSeed.map((s) =>
        sweep.kind === "router"
          ? {
              x: p.params.poolSize,
              series: `k ${p.params.k}, side effects ${p.params.sideEffects}`,
              diff: s.a[field] - s.b[field],
            }
          : {
              x: p.params.cueHalfLife || 0,
              series: `probe ${p.params.reanchorBudget} rollouts`,
              diff: s.a[field] - s.b[field],
            },
      ),
    );
  const [a, b] = sweep.arms;
  const x = sweep.kind === "router" ? "pool size asked" : "hint half-life (steps; 0 = fixed)";
  return panels(`${a} − ${b}, H0 Avg@3 (mean ± std over seeds)`, [
    { title: `train (${x})`, rows: rows("train"), x: "x", y: "diff", color: "series", yTitle: "difference" },
    { title: `held-out (${x})`, rows: rows("heldout"), x: "x", y: "diff", color: "series", yTitle: "difference" },
  ]);
}
