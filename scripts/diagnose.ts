// Trains one arm for one seed and prints per-combination H0 success and a failing trajectory per combination.
import { ArmConfig, TrainConfig, createRng, runEpisode, trainArm, type Task } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "../packages/cli/src/embedded.ts";
const seed = Number(process.argv[2] ?? 8);
const armName = process.argv[3] ?? "harness-s";
const { deps, evolution } = await embeddedSetup(defaultEmbeddedSettings);
const policy = deps.createPolicy(seed);
const runRollout = (t: Task, h: any, s: number) => runEpisode(t, h, s, { env: deps.env, policy });
const arm = ArmConfig.parse(armName === "grpo" ? { name: "grpo", rescue: "none", reanchor: false } : armName === "grpo-budget" ? { name: "grpo-budget", rescue: "resample-h0", extraBudget: Number(process.env.EXTRA ?? 300), reanchor: false } : { name: "harness-s", rescue: "router" });
const r = await trainArm(arm, TrainConfig.parse(JSON.parse(process.env.TRAIN ?? "{}")), { policy, runRollout, pool: evolution.pool, trainTasks: deps.train, probeTasks: deps.dev, initialProfiles: evolution.initialProfiles, voters: deps.voters, rng: createRng(seed) });
for (const split of ["train", "heldout"] as const) {
  const by = new Map<string, { ok: number; n: number; fail?: string }>();
  for (const t of deps[split]) {
    for (let i = 0; i < 4; i++) {
      const ro = await runRollout(t, evolution.pool.base, 1000 + i);
      const k = `${t.family}:${t.requirements.join("+") || "plain"}`;
      const e = by.get(k) ?? { ok: 0, n: 0 };
      e.n++; if (ro.success) e.ok++; else e.fail ??= ro.steps.map((s) => `${s.action}>${s.result}`).join(" ") + " | " + ro.failureTags.join(",");
      by.set(k, e);
    }
  }
  console.log(split);
  for (const [k, e] of by) console.log(`  ${k.padEnd(28)} ${(e.ok / e.n).toFixed(2)}  ${e.ok < e.n ? e.fail : ""}`);
}
