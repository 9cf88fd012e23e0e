// The pre-declared tuning of harness-s's own settings on the validation protocol (README, "Tuning
// without the held-out tasks"). Usage: node --import tsx scripts/tune.ts [seeds, default 101-110] [out dir]
// Objective: harness-s's validation H0 Avg@3. Shared settings (steps, learning rate, batch, group
// size) are not candidates, so the baselines are untouched. Test held-out tasks are never built.
import { mkdir, writeFile } from "node:fs/promises";
import { ExperimentConfig, runExperiment, type ArmSummary, type ExperimentSummary } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "../packages/cli/src/embedded.ts";
import { pairedBy, pts, signed } from "../packages/cli/src/report/stats.ts";
import { parseSeedList } from "../packages/cli/src/seeds.ts";

export const CANDIDATES: Record<string, Record<string, unknown>> = {
  default: {},
  "k=1": { k: 1 },
  "k=3": { k: 3 },
  "reanchorEvery=3": { reanchorEvery: 3 },
  "reanchorEvery=10": { reanchorEvery: 10 },
  "exploration=0.1": { exploration: 0.1 },
  "diverse": { diverse: true },
  "maskIntercepted=false": { maskIntercepted: false },
  "rescueContext=base": { rescueContext: "base" },
};
/** Adopt only if better than the default by this much on average and in this share of seeds. */
const MIN_GAIN = 0.02;
const MIN_SHARE = 0.7;

const seeds = parseSeedList(process.argv[2] ?? "101-110");
const out = process.argv[3] ?? "results/tune";
const deps = embeddedSetup({ ...defaultEmbeddedSettings, protocol: "validation" });
const runs = new Map<string, ExperimentSummary>();
for (const [name, train] of Object.entries(CANDIDATES)) {
  const started = Date.now();
  const config = ExperimentConfig.parse({ seeds, arms: ["grpo", "grpo-budget", "harness-s"], train, protocol: "validation" });
  runs.set(name, await runExperiment(config, deps));
  process.stderr.write(`${name}: ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
}
const armOf = (s: ExperimentSummary, name: string): ArmSummary => s.arms.find((a) => a.name === name)!;
const base = armOf(runs.get("default")!, "harness-s");
const rows = [...runs].map(([name, s]) => {
  const hs = armOf(s, "harness-s");
  const val = pairedBy(hs, base, (r) => r.h0.heldout.avgAt3);
  const train = pairedBy(hs, base, (r) => r.h0.train.avgAt3);
  const vsBudget = pairedBy(hs, armOf(s, "grpo-budget"), (r) => r.h0.heldout.avgAt3);
  const ratio = hs.rollouts / armOf(s, "grpo").rollouts;
  const qualifies = name !== "default" && val.mean >= MIN_GAIN && val.wins >= Math.ceil(MIN_SHARE * val.n) && train.mean > -0.02 && ratio <= 1.3;
  return { name, validation: hs.h0.heldout.avgAt3, train: hs.h0.train.avgAt3, val, trainDiff: train, vsBudget, ratio, qualifies };
});
console.log(`validation protocol, seeds ${seeds.join(",")}; objective: harness-s validation H0 Avg@3`);
console.log("| candidate | harness-s val Avg@3 | − default (val) | − default (train) | rollouts ÷ grpo | (info) hs − grpo-budget val | adopt? |");
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(`| ${r.name} | ${pts(r.validation)} | ${signed(r.val.mean)} ± ${pts(r.val.std)} (${r.val.wins}/${r.val.n}) | ${signed(r.trainDiff.mean)} | ${r.ratio.toFixed(3)} | ${signed(r.vsBudget.mean)} ± ${pts(r.vsBudget.std)} (${r.vsBudget.wins}/${r.vsBudget.n}) | ${r.qualifies ? "qualifies" : "—"} |`);
}
const best = rows.filter((r) => r.qualifies).sort((a, b) => b.val.mean - a.val.mean)[0];
console.log(best ? `\ndecision: adopt ${best.name}` : "\ndecision: keep the defaults (no candidate qualifies)");
await mkdir(out, { recursive: true });
await writeFile(`${out}/tune.json`, JSON.stringify({ seeds, rule: { MIN_GAIN, MIN_SHARE }, rows, decision: best?.name ?? "default" }, null, 2));
