import { runEpisode, parseHarnessSpec, type Task } from "@harness-s/core";
import { buildSuite, EmbeddedEnvironment, embeddedH0, embeddedPolicyPrior, families } from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";

const suite = buildSuite({});
const env = new EmbeddedEnvironment();
const policy = new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: Number(process.env.BETA ?? 3) });
const oracle = parseHarnessSpec({
  id: "oracle", budget: { maxTurns: 10 }, provenance: { direction: "contract" },
  postObservation: families.flatMap((f) => Object.values(f.cuesFor).flat()).map((c) => ({ ...c, maxFires: 5 })),
});
async function rate(tasks: Task[], h = embeddedH0, n = 20) {
  const byCombo = new Map<string, number[]>();
  for (const t of tasks) {
    let s = 0;
    for (let i = 0; i < n; i++) s += (await runEpisode(t, h, i * 7919 + t.id.length, { env, policy })).success ? 1 : 0;
    const key = `${t.family}:${t.requirements.join("+") || "plain"}`;
    byCombo.set(key, [...(byCombo.get(key) ?? []), s / n]);
  }
  return [...byCombo.entries()].map(([k, v]) => `${k}=${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(2)}`).join("  ");
}
const targeted = (t: Task) => parseHarnessSpec({ id: "t", budget: { maxTurns: 10 }, provenance: { direction: "contract" },
  postObservation: t.requirements.flatMap((r) => families.find((f) => f.name === t.family)!.cuesFor[r] ?? []) });
async function rateTargeted(tasks: Task[], n = 20) {
  const byCombo = new Map<string, number[]>();
  for (const t of tasks) { let s = 0;
    for (let i = 0; i < n; i++) s += (await runEpisode(t, targeted(t), i * 7919 + 3, { env, policy })).success ? 1 : 0;
    const key = `${t.family}:${t.requirements.join("+") || "plain"}`; byCombo.set(key, [...(byCombo.get(key) ?? []), s / n]); }
  return [...byCombo.entries()].map(([k, v]) => `${k}=${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(2)}`).join("  ");
}
console.log("targeted tr", await rateTargeted(suite.train));
console.log("targeted ho", await rateTargeted(suite.heldout));
const t0 = Date.now();
console.log("H0 train  ", await rate(suite.train));
console.log("oracle tr ", await rate(suite.train, oracle));
console.log("H0 heldout", await rate(suite.heldout));
console.log("oracle ho ", await rate(suite.heldout, oracle));
console.log("ms", Date.now() - t0);
