import { mean, pairedSummary, sampleStd, type ArmSummary, type ExperimentSummary } from "@harness-s/core";
import { arm, pts, signed } from "./stats.ts";

type Split = "train" | "heldout";

function familyScores(a: ArmSummary, split: Split, family: string): Map<number, number> {
  return new Map(a.perSeed.flatMap((r) => (r.byFamily[split][family] ? [[r.seed, r.byFamily[split][family]!.avgAt3] as const] : [])));
}

/** Families present in the summary's per-seed results, in first-seen order. */
export function familiesOf(s: ExperimentSummary, split: Split): string[] {
  return [...new Set(s.arms.flatMap((a) => a.perSeed.flatMap((r) => Object.keys(r.byFamily[split]))))];
}

/** Paired per-seed differences a − b of one family's H0 Avg@3. */
export function pairedByFamily(a: ArmSummary, b: ArmSummary, split: Split, family: string) {
  const xs = familyScores(a, split, family);
  const ys = familyScores(b, split, family);
  const diffs = [...xs.entries()].filter(([seed]) => ys.has(seed)).map(([seed, x]) => x - ys.get(seed)!);
  return { ...pairedSummary(diffs), diffs };
}

/**
 * The held-out H0 Avg@3 of every arm per task family, and the harness-s − grpo-budget difference per
 * family and seed: where an aggregate difference comes from, and how much of it is one family.
 */
export function renderFamilies(s: ExperimentSummary): string[] {
  const fams = familiesOf(s, "heldout");
  if (!fams.length) return [];
  const out = ["## Held-out by task family (H0 Avg@3)", ""];
  out.push(`| arm | ${fams.join(" | ")} |`, `|---|${fams.map(() => "---|").join("")}`);
  for (const a of s.arms) {
    const cells = fams.map((f) => {
      const xs = [...familyScores(a, "heldout", f).values()];
      return `${pts(mean(xs))} ± ${pts(sampleStd(xs))}`;
    });
    out.push(`| ${a.name} | ${cells.join(" | ")} |`);
  }
  const hs = arm(s, "harness-s");
  const budget = arm(s, "grpo-budget");
  if (hs && budget) {
    out.push("", "| family | harness-s − grpo-budget | seeds better | per seed |", "|---|---|---|---|");
    for (const f of fams) {
      const p = pairedByFamily(hs, budget, "heldout", f);
      out.push(`| ${f} | ${signed(p.mean)} ± ${pts(p.std)} | ${p.wins}/${p.n} | ${p.diffs.map(signed).join(", ")} |`);
    }
    out.push(
      "",
      "Held-out tasks combine requirements never seen together in training, so a family's held-out score can hinge on a single learned association; large per-family swings in single seeds show where the spread of the aggregate comes from.",
      "",
    );
  }
  return out;
}
