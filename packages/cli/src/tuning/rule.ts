import { z } from "zod";
import type { ArmSummary, ExperimentSummary } from "@harness-s/core/experiment";
import { pairedBy, pts, signed } from "@harness-s/adapters/report";

/** Whose validation score a tuning round maximises: harness-s's own, or a baseline's. */
export const TuningObjective = z.enum(["harness-s", "grpo-budget", "grpo"]);
export type TuningObjective = z.infer<typeof TuningObjective>;

/**
 * When a candidate may replace the defaults: the objective arm is better on validation by
 * `minGain` on average and in `minShare` of the seeds and loses at most `maxTrainLoss` on train,
 * and harness-s stays within `maxRolloutRatio` of grpo's rollouts.
 */
export const TuningRule = z.object({
  objective: TuningObjective.default("harness-s"),
  minGain: z.number().min(0).default(0.02),
  minShare: z.number().min(0).max(1).default(0.7),
  maxTrainLoss: z.number().min(0).default(0.02),
  maxRolloutRatio: z.number().positive().default(1.3),
});
export type TuningRule = z.infer<typeof TuningRule>;

/** Candidate name → training-config overrides; `default` (no overrides) is always added first. */
export const Candidates = z.record(z.string().min(1), z.record(z.string(), z.unknown()));
export type Candidates = z.infer<typeof Candidates>;

/** Around the current defaults: the settings of harness-s itself, never the shared ones. */
export const DEFAULT_CANDIDATES: Candidates = {
  "k=1": { k: 1 },
  "k=3": { k: 3 },
  "reanchorEvery=3": { reanchorEvery: 3 },
  "reanchorEvery=10": { reanchorEvery: 10 },
  "exploration=0": { exploration: 0 },
  "exploration=0.2": { exploration: 0.2 },
  diverse: { diverse: true },
  "maskIntercepted=false": { maskIntercepted: false },
  "rescueContext=base": { rescueContext: "base" },
};

const Paired = z.object({ mean: z.number(), std: z.number(), wins: z.number().int(), n: z.number().int() });
export const TuningRow = z.object({
  name: z.string(),
  overrides: z.record(z.string(), z.unknown()),
  validation: z.number(),
  train: z.number(),
  vsDefault: Paired,
  trainVsDefault: Paired,
  rolloutRatio: z.number(),
  /** Information only: the objective is one arm's own score, never harness-s's lead over a baseline. */
  vsBudget: Paired,
  qualifies: z.boolean(),
});
export type TuningRow = z.infer<typeof TuningRow>;

const armOf = (s: ExperimentSummary, name: string): ArmSummary => {
  const found = s.arms.find((a) => a.name === name);
  if (!found) throw new Error(`summary has no ${name} arm`);
  return found;
};

/**
 * Scores each candidate's validation run against the `default` run, paired by seed, and marks
 * the ones the rule lets replace the defaults.
 *
 * @example
 * const rows = tuningRows(new Map([["default", base], ["k=3", k3]]), { "k=3": { k: 3 } }, TuningRule.parse({}));
 */
export function tuningRows(
  runs: ReadonlyMap<string, ExperimentSummary>,
  candidates: Candidates,
  rule: TuningRule,
): TuningRow[] {
  const base = armOf(runs.get("default")!, rule.objective);
  return [...runs].map(([name, s]) => {
    const hs = armOf(s, "harness-s");
    const scored = armOf(s, rule.objective);
    const vsDefault = pairedBy(scored, base, (r) => r.h0.heldout.avgAt3);
    const trainVsDefault = pairedBy(scored, base, (r) => r.h0.train.avgAt3);
    const rolloutRatio = hs.rollouts / armOf(s, "grpo").rollouts;
    const qualifies =
      name !== "default" &&
      vsDefault.mean >= rule.minGain &&
      vsDefault.wins >= Math.ceil(rule.minShare * vsDefault.n) &&
      trainVsDefault.mean >= -rule.maxTrainLoss &&
      rolloutRatio <= rule.maxRolloutRatio;
    const { diffs: _v, ...vd } = vsDefault;
    const { diffs: _t, ...td } = trainVsDefault;
    const { diffs: _b, ...vb } = pairedBy(hs, armOf(s, "grpo-budget"), (r) => r.h0.heldout.avgAt3);
    return {
      name,
      overrides: candidates[name] ?? {},
      validation: scored.h0.heldout.avgAt3,
      train: scored.h0.train.avgAt3,
      vsDefault: vd,
      trainVsDefault: td,
      rolloutRatio,
      vsBudget: vb,
      qualifies,
    };
  });
}

/**
 * The qualifying candidate with the largest validation gain, or undefined: keep the defaults.
 *
 * @example
 * const chosen = decide(rows)?.name ?? "default";
 */
export function decide(rows: readonly TuningRow[]): TuningRow | undefined {
  return rows.filter((r) => r.qualifies).sort((a, b) => b.vsDefault.mean - a.vsDefault.mean)[0];
}

const pm = (p: z.infer<typeof Paired>) => `${signed(p.mean)} ± ${pts(p.std)} (${p.wins}/${p.n})`;

/**
 * The tuning table as markdown, with the decision.
 *
 * @example
 * await writeFile("tune.md", renderTuning(rows, [101, 102], TuningRule.parse({})));
 */
export function renderTuning(rows: readonly TuningRow[], seeds: readonly number[], rule: TuningRule): string {
  const chosen = decide(rows);
  return [
    "# Harness-S tuning (validation protocol)",
    "",
    `Seeds ${seeds.join(", ")}. Objective: ${rule.objective}'s validation H0 Avg@3 (the train pair a+b held back; no held-out task built). A candidate replaces the defaults if ${rule.objective} is better by ≥ ${pts(rule.minGain)} points on average and in ≥ ${Math.round(100 * rule.minShare)}% of seeds and loses ≤ ${pts(rule.maxTrainLoss)} on train, and harness-s spends ≤ ${rule.maxRolloutRatio}× grpo's rollouts. The last column is information only.`,
    "",
    `| candidate | ${rule.objective} validation Avg@3 | − default (seeds better) | − default, train | rollouts ÷ grpo | harness-s − grpo-budget, validation | adopt? |`,
    "|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${pts(r.validation)} | ${r.name === "default" ? "—" : pm(r.vsDefault)} | ${r.name === "default" ? "—" : signed(r.trainVsDefault.mean)} | ${r.rolloutRatio.toFixed(3)} | ${pm(r.vsBudget)} | ${r.qualifies ? "qualifies" : "—"} |`,
    ),
    "",
    chosen
      ? `Decision: adopt **${chosen.name}** (${JSON.stringify(chosen.overrides)}).`
      : "Decision: keep the defaults (no candidate meets the rule).",
    "",
  ].join("\n");
}
