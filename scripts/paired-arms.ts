// Paired differences between any two arms of an experiment's summary.json, seed by seed, under H0
// (Avg@3 on train and held-out, in points), with the same pairedSummary report.md uses; and each
// arm's rollouts ÷ grpo's. report.md pairs only the default arms against their baselines; this
// prints any pair (block C5's and C6's adaptive rows in docs/results.md).
// Run: node --import tsx scripts/paired-arms.ts confirmation/C6/summary.json harness-s-adaptive:grpo-budget
// harness-s-adaptive:harness-s
import { readFileSync } from "node:fs";
import { z } from "zod";
import { pairedSummary } from "@harness-s/core/metrics";

const Split = z.object({ avgAt3: z.number() });
const Arm = z.object({
  name: z.string(),
  rollouts: z.number(),
  perSeed: z.array(
    z.object({
      seed: z.number(),
      rollouts: z.number(),
      h0: z.object({ train: Split, heldout: Split }),
      rescue: z.object({ triggered: z.number(), replaced: z.number() }).partial().optional(),
    }),
  ),
});
const Summary = z.object({ arms: z.array(Arm) });

const [file, ...pairs] = process.argv.slice(2);
if (!file || pairs.length === 0) throw new Error("usage: paired-arms.ts SUMMARY.json ARM:BASELINE [ARM:BASELINE ...]");
const summary = Summary.parse(JSON.parse(readFileSync(file, "utf8")));
const arm = (name: string) =>
  summary.arms.find((a) => a.name === name) ??
  (() => {
    throw new Error(`no arm ${name} in ${file}`);
  })();
const points = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(100 * x).toFixed(1)}`;

const grpo = summary.arms.find((a) => a.name === "grpo");
for (const a of summary.arms) {
  const rescues = a.perSeed.map((s) => s.rescue ?? {});
  const per = (k: "triggered" | "replaced") =>
    (rescues.reduce((t, r) => t + (r[k] ?? 0), 0) / rescues.length).toFixed(1);
  console.log(
    `${a.name.padEnd(26)} rollouts ${Math.round(a.rollouts)}${grpo ? ` (${(a.rollouts / grpo.rollouts).toFixed(2)}× grpo)` : ""}; rescues triggered ${per("triggered")}, replaced ${per("replaced")} per seed`,
  );
}
for (const pair of pairs) {
  const [x, y] = pair.split(":");
  const [a, b] = [arm(x!), arm(y!)];
  for (const split of ["train", "heldout"] as const) {
    const diffs = a.perSeed.map((s) => {
      const other = b.perSeed.find((t) => t.seed === s.seed);
      if (!other) throw new Error(`seed ${s.seed} of ${a.name} is not in ${b.name}`);
      return s.h0[split].avgAt3 - other.h0[split].avgAt3;
    });
    const p = pairedSummary(diffs);
    console.log(
      `${`${a.name} − ${b.name}`.padEnd(44)} ${split.padEnd(8)} ${points(p.mean)} ± ${(100 * p.std).toFixed(1)} (${p.wins}/${p.n} better; ${points(p.ci95[0])} to ${points(p.ci95[1])}; sign test p = ${p.signP.toFixed(3)})`,
    );
  }
}
