import { mean, pairedSummary, sampleStd } from "@harness-s/core/metrics";
import type { ArmSummary, ExperimentSummary } from "@harness-s/core/experiment";

export type Metric = "train.avgAt3" | "heldout.avgAt3" | "train.passAt3" | "heldout.passAt3";

export function metricOf(run: ArmSummary["perSeed"][number], metric: Metric): number {
  const [split, key] = metric.split(".") as ["train" | "heldout", "avgAt3" | "passAt3"];
  return run.h0[split][key];
}

export function arm(summary: ExperimentSummary, name: string): ArmSummary | undefined {
  return summary.arms.find((a) => a.name === name);
}

type SeedRun = ArmSummary["perSeed"][number];

/** Paired per-seed differences a − b of `value`, over the seeds where both arms have one. */
export function pairedBy(a: ArmSummary, b: ArmSummary, value: (run: SeedRun) => number | undefined) {
  const ys = new Map(b.perSeed.map((r) => [r.seed, value(r)]));
  const diffs = a.perSeed.flatMap((r) => {
    const x = value(r);
    const y = ys.get(r.seed);
    return x === undefined || y === undefined ? [] : [x - y];
  });
  return { ...pairedSummary(diffs), diffs };
}

/** Paired per-seed differences a − b on one metric. */
export function paired(a: ArmSummary, b: ArmSummary, metric: Metric) {
  return pairedBy(a, b, (r) => metricOf(r, metric));
}

export function meanStd(a: ArmSummary, metric: Metric): { mean: number; std: number } {
  const xs = a.perSeed.map((r) => metricOf(r, metric));
  return { mean: mean(xs), std: sampleStd(xs) };
}

export const pts = (x: number) => (100 * x).toFixed(1);
export const signed = (x: number) => `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)}`;
/** A 95% interval in signed points, "—" when it is not finite (fewer than two seeds). */
export const interval = ([lo, hi]: [number, number]) => (Number.isFinite(lo) ? `${signed(lo)} to ${signed(hi)}` : "—");

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

/**
 * The banner for a validation-protocol summary, whose "held-out" slot is a held-back train
 * combination; undefined for a test run.
 *
 * @example
 * const note = protocolNote(summary); // "VALIDATION protocol: …" or undefined
 */
export function protocolNote(summary: ExperimentSummary): string | undefined {
  if (summary.config.protocol !== "validation") return undefined;
  return 'VALIDATION protocol: every "held-out" figure here is the validation split (the train pair a+b held back from training, unseen as a combination); the test held-out tasks were never built. Use it to tune; report test figures from a run with --protocol test.';
}

/** The acceptance figures, computed from the summary (never asserted by hand). */
export function acceptanceChecks(summary: ExperimentSummary): Check[] {
  const hs = arm(summary, "harness-s");
  const grpo = arm(summary, "grpo");
  const budget = arm(summary, "grpo-budget");
  if (!hs || !grpo || !budget) return [];
  const checks: Check[] = [];
  for (const base of [grpo, budget]) {
    for (const metric of ["train.avgAt3", "heldout.avgAt3"] as const) {
      const p = paired(hs, base, metric);
      // "at least 4 of 5 seeds": the same share (80%) of however many seeds were run.
      const need = Math.ceil(0.8 * p.n - 1e-9);
      checks.push({
        name: `harness-s − ${base.name} on H0 ${metric}`,
        pass: p.mean >= 0.05 && p.wins >= need,
        detail: `${signed(p.mean)} ± ${pts(p.std)} points, better in ${p.wins}/${p.n} seeds (needs ≥ +5.0 and ≥ ${need}/${p.n})`,
      });
    }
  }
  const ratio = hs.rollouts / grpo.rollouts;
  checks.push({
    name: "harness-s rollouts ÷ grpo rollouts",
    pass: ratio <= 1.3,
    detail: `${ratio.toFixed(3)} (needs ≤ 1.3)`,
  });
  const gain = grpo.h0.train.avgAt3 - summary.initial.train.avgAt3;
  checks.push({
    name: "grpo train Avg@3 gain over the initial policy",
    pass: gain >= 0.1,
    detail: `${signed(gain)} points (needs ≥ +10.0)`,
  });
  if (hs.rank1) {
    const before = hs.rank1.before.heldout.passAt3 - summary.initial.heldout.passAt3;
    const after = hs.rank1.after.heldout.passAt3 - hs.h0.heldout.passAt3;
    checks.push({
      name: "Rank-1 − H0 held-out Pass@3 gap shrinks with harness-s training",
      pass: after < before,
      detail: `before ${signed(before)}, after ${signed(after)}`,
    });
  }
  checks.push({
    name: "locality: siblings repair different failures (mean Jaccard < 0.5)",
    pass: summary.suite.locality < 0.5,
    detail: summary.suite.locality.toFixed(3),
  });
  checks.push({
    name: "complementarity > 1",
    pass: summary.suite.complementarity > 1,
    detail: summary.suite.complementarity.toFixed(3),
  });
  checks.push({
    name: "nonstationarity > 0 (utility ranking changes)",
    pass: summary.suite.nonstationarity > 0,
    detail: summary.suite.nonstationarity.toFixed(3),
  });
  return checks;
}
