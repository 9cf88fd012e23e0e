// Trains harness-s and harness-s-noreanchor on one seed and compares their routing decisions.
import { ArmConfig, TrainConfig, createRng, runEpisode, trainArm, type Task } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "../packages/cli/src/embedded.ts";
const seed = Number(process.argv[2] ?? 1);
const { deps, evolution } = await embeddedSetup(defaultEmbeddedSettings);
const out: Record<string, Awaited<ReturnType<typeof trainArm>>> = {};
for (const reanchor of [true, false]) {
  const policy = deps.createPolicy(seed);
  const runRollout = (t: Task, h: any, s: number) => runEpisode(t, h, s, { env: deps.env, policy });
  out[String(reanchor)] = await trainArm(ArmConfig.parse({ name: "harness-s", rescue: "router", reanchor }), TrainConfig.parse({ batchSize: 24, k: 1, ...JSON.parse(process.env.TRAIN ?? "{}") }), {
    policy, runRollout, pool: evolution.pool, trainTasks: deps.train, probeTasks: deps.dev, initialProfiles: evolution.initialProfiles, voters: deps.voters, rng: createRng(seed) });
}
const a = out["true"]!, b = out["false"]!;
const mapB = new Map(b.decisions.map((d) => [d.id, d]));
let same = 0, diff = 0;
for (const d of a.decisions) {
  const o = mapB.get(d.id);
  if (!o) continue;
  if (o.chosen.join() === d.chosen.join()) same++;
  else { diff++; if (diff <= 8) console.log(d.id, "tags", d.failureTags.join(","), "reanchored:", d.chosen.join(), " stale:", o.chosen.join(), "| tag-voter top:", d.ballots[0]?.ranking[0], "vs", o.ballots[0]?.ranking[0]); }
}
console.log("decisions", a.decisions.length, b.decisions.length, "same", same, "different", diff);
console.log("utilities", JSON.stringify(a.utilities.map((u) => [u.step, Object.fromEntries(Object.entries(u.values).map(([k, v]) => [k, Number.isFinite(v) ? +v.toFixed(2) : null]))])));
