import { mean } from "@harness-s/core/metrics";
import type { ExperimentSummary, SeedBaseline } from "@harness-s/core/experiment";
import type { Task } from "@harness-s/core";
import { overallCatAccuracy } from "./eval.ts";

type Scores = Record<string, { avgAt3: number }>;

/**
 * AgentBench's figures under H0 on the evaluated held-out rows: accuracy per row type (the mean
 * success over the evaluation's attempts) and `overall_cat_accuracy` (SELECT rows pooled, INSERT
 * and UPDATE: a third each), for the initial policy and for each arm after training, mean over seeds.
 */
export function dbbenchAccuracies(
  byType: readonly Scores[],
  evaluated: readonly Task[],
): { perType: Record<string, number>; overallCatAccuracy: number } {
  const counts = new Map<string, number>();
  for (const t of evaluated) counts.set(t.tags[0]!, (counts.get(t.tags[0]!) ?? 0) + 1);
  const perType: Record<string, number> = {};
  for (const type of [...counts.keys()].sort())
    perType[type] = mean(byType.map((s) => s[`dbbench:${type}`]?.avgAt3 ?? 0));
  const asCounts = Object.fromEntries([...counts].map(([t, n]) => [t, { correct: perType[t]! * n, total: n }]));
  return { perType, overallCatAccuracy: overallCatAccuracy(asCounts) };
}

/** The report's DBBench section: per-type accuracy and overall_cat_accuracy before and after training. */
export function dbbenchReportSection(
  summary: ExperimentSummary,
  baselines: readonly SeedBaseline[],
  evaluated: readonly Task[],
): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const rows: [string, ReturnType<typeof dbbenchAccuracies>][] = [
    [
      "initial policy",
      dbbenchAccuracies(
        baselines.map((b) => b.byCombination?.heldout ?? {}),
        evaluated,
      ),
    ],
    ...summary.arms.map(
      (a) =>
        [
          a.name,
          dbbenchAccuracies(
            a.perSeed.map((r) => r.byCombination.heldout),
            evaluated,
          ),
        ] as [string, ReturnType<typeof dbbenchAccuracies>],
    ),
  ];
  const types = Object.keys(rows[0]![1].perType);
  return [
    "",
    "## DBBench: AgentBench's accuracies under H0 (held-out rows evaluated)",
    "",
    `${evaluated.length} held-out rows; accuracy = mean success over the evaluation's attempts, mean over seeds; overall_cat_accuracy: SELECT rows pooled, INSERT and UPDATE, a third each.`,
    "",
    `| policy | overall_cat_accuracy | ${types.join(" | ")} |`,
    `|---|---|${types.map(() => "---").join("|")}|`,
    ...rows.map(
      ([name, r]) => `| ${name} | ${pct(r.overallCatAccuracy)} | ${types.map((t) => pct(r.perType[t]!)).join(" | ")} |`,
    ),
    "",
    ...(rows.every(([, r]) => r.overallCatAccuracy === 0)
      ? [
          "No policy solved an evaluated row. With an untrained model (the tiny test model solves none) such a run checks that every part works — rescues triggered, siblings' contexts rendered, datums trained, the evaluation written — not that anything was learned.",
          "",
        ]
      : []),
  ].join("\n");
}
