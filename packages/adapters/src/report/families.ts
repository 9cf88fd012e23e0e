import { mean, sampleStd } from "@harness-s/core/metrics";
import type { ArmSeedResult, ArmSummary, ExperimentSummary } from "@harness-s/core/experiment";
import { arm, pairedBy, pts, signed } from "./stats.ts";

/** Where a breakdown's held-out scores live in a per-(arm, seed) result. */
export type Breakdown = (run: ArmSeedResult) => Record<string, { avgAt3: number }>;
export const byFamily: Breakdown = (r) => r.byFamily.heldout;
export const byCombination: Breakdown = (r) => r.byCombination.heldout;

/** Groups present in the summary's per-seed results, in first-seen order. */
export function groupsOf(s: ExperimentSummary, breakdown: Breakdown): string[] {
  return [...new Set(s.arms.flatMap((a) => a.perSeed.flatMap((r) => Object.keys(breakdown(r)))))];
}

/** Paired per-seed differences a − b of one group's held-out H0 Avg@3. */
export function pairedByGroup(a: ArmSummary, b: ArmSummary, breakdown: Breakdown, group: string) {
  return pairedBy(a, b, (r) => breakdown(r)[group]?.avgAt3);
}

const cell = (a: ArmSummary, breakdown: Breakdown, group: string) => {
  const xs = a.perSeed.flatMap((r) => breakdown(r)[group]?.avgAt3 ?? []);
  return xs.length ? `${pts(mean(xs))} ± ${pts(sampleStd(xs))}` : "—";
};

/**
 * The held-out H0 Avg@3 of every arm per task family, and the harness-s − grpo-budget difference per
 * family and seed: where an aggregate difference comes from, and how much of it is one family.
 */
export function renderFamilies(s: ExperimentSummary): string[] {
  const fams = groupsOf(s, byFamily);
  if (!fams.length) return [];
  const out = ["## Held-out by task family (H0 Avg@3)", ""];
  out.push(`| arm | ${fams.join(" | ")} |`, `|---|${fams.map(() => "---|").join("")}`);
  for (const a of s.arms) out.push(`| ${a.name} | ${fams.map((f) => cell(a, byFamily, f)).join(" | ")} |`);
  const hs = arm(s, "harness-s");
  const budget = arm(s, "grpo-budget");
  if (hs && budget) {
    out.push("", "| family | harness-s − grpo-budget | seeds better | per seed |", "|---|---|---|---|");
    for (const f of fams) {
      const p = pairedByGroup(hs, budget, byFamily, f);
      out.push(`| ${f} | ${signed(p.mean)} ± ${pts(p.std)} | ${p.wins}/${p.n} | ${p.diffs.map(signed).join(", ")} |`);
    }
    out.push(
      "",
      "Held-out tasks combine requirements never seen together in training, so a family's held-out score can hinge on a single learned association; large per-family swings in single seeds show where the spread of the aggregate comes from.",
      "",
    );
  }
  out.push(...renderCombinations(s));
  return out;
}

/** Held-out H0 Avg@3 per latent requirement combination for the main arms, with the paired difference. */
function renderCombinations(s: ExperimentSummary): string[] {
  const combos = groupsOf(s, byCombination);
  const shown = ["grpo", "grpo-budget", "harness-s"]
    .map((n) => arm(s, n))
    .filter((a): a is ArmSummary => a !== undefined);
  if (!combos.length || !shown.length) return [];
  const hs = arm(s, "harness-s");
  const budget = arm(s, "grpo-budget");
  const paired = hs && budget;
  const out = ["### Held-out by requirement combination (H0 Avg@3)", ""];
  out.push(
    `| combination | ${shown.map((a) => a.name).join(" | ")}${paired ? " | harness-s − grpo-budget (seeds better) |" : " |"}`,
  );
  out.push(`|---|${shown.map(() => "---|").join("")}${paired ? "---|" : ""}`);
  for (const c of combos) {
    const p = paired ? pairedByGroup(hs, budget, byCombination, c) : undefined;
    out.push(
      `| ${c} | ${shown.map((a) => cell(a, byCombination, c)).join(" | ")}${p ? ` | ${signed(p.mean)} (${p.wins}/${p.n}) |` : " |"}`,
    );
  }
  out.push("");
  return out;
}
