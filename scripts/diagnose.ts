// Trains one arm on one seed and prints, per requirement combination, H0 success over 4 attempts
// and one failing trajectory. Usage: node --import tsx scripts/diagnose.ts [seed] [grpo|grpo-budget|harness-s]
// (TRAIN='{"steps":10}' overrides the training config; EXTRA sets grpo-budget's extra rollouts;
// PROTOCOL=validation diagnoses on the validation protocol, whose "heldout" is the held-back pair.)
import { ArmConfig, TrainConfig, trainArm } from "@harness-s/core/training";
import { createRng, runEpisode, type HarnessSpec, type Task } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

const seed = Number(process.argv[2] ?? 1);
const armName = process.argv[3] ?? "harness-s";
const setup = embeddedSetup({
  ...defaultEmbeddedSettings,
  protocol: process.env.PROTOCOL === "validation" ? "validation" : "test",
});
const inst = await setup.instance(seed);
const policy = setup.createPolicy(seed);
const runRollout = (t: Task, h: HarnessSpec, s: number) => runEpisode(t, h, s, { env: setup.env, policy });
const arm = ArmConfig.parse(
  armName === "grpo"
    ? { name: "grpo", rescue: "none", reanchor: false }
    : armName === "grpo-budget"
      ? { name: "grpo-budget", rescue: "resample-h0", extraBudget: Number(process.env.EXTRA ?? 300), reanchor: false }
      : { name: "harness-s", rescue: "router" },
);
await trainArm(arm, TrainConfig.parse(JSON.parse(process.env.TRAIN ?? "{}")), {
  policy,
  runRollout,
  pool: inst.evolution.pool,
  trainTasks: inst.train,
  probeTasks: inst.dev,
  initialProfiles: inst.evolution.initialProfiles,
  probePriority: inst.evolution.h0Failures,
  voters: setup.voters,
  rng: createRng(seed),
});
for (const split of ["train", "heldout"] as const) {
  const by = new Map<string, { ok: number; n: number; fail?: string }>();
  for (const t of inst[split]) {
    for (let i = 0; i < 4; i++) {
      const ro = await runRollout(t, inst.evolution.pool.base, 1000 + i);
      const k = `${t.family}:${t.requirements.join("+") || "plain"}`;
      const e = by.get(k) ?? { ok: 0, n: 0 };
      e.n++;
      if (ro.success) e.ok++;
      else e.fail ??= `${ro.steps.map((s) => `${s.action}>${s.result}`).join(" ")} | ${ro.failureTags.join(",")}`;
      by.set(k, e);
    }
  }
  console.log(split);
  for (const [k, e] of by) console.log(`  ${k.padEnd(28)} ${(e.ok / e.n).toFixed(2)}  ${e.ok < e.n ? e.fail : ""}`);
}
