import { createRng, evolvePool, EvolutionConfig, ExperimentConfig, mutationProposer, runEpisode, runExperiment, statisticalVoters, TrainConfig } from "@harness-s/core";
import { buildSuite, EmbeddedEnvironment, embeddedH0, embeddedPolicyPrior, familyByName, embeddedVocabulary } from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";
const beta = Number(process.env.BETA ?? 5);
const suite = buildSuite({ cueRate: Number(process.env.CUE ?? 0.2), ...JSON.parse(process.env.SUITE ?? "{}") });
const env = new EmbeddedEnvironment();
const mk = () => new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: beta });
const p0 = mk();
const facts = embeddedVocabulary().facts;
const evo = await evolvePool(EvolutionConfig.parse({}), {
  base: embeddedH0, devTasks: suite.dev, proposer: mutationProposer, rng: createRng(1),
  runRollout: (t, h, s) => runEpisode(t, h, s, { env, policy: p0 }),
  vocabulary: (f) => ({ tools: familyByName(f).tools, facts, roles: familyByName(f).toolRoles }),
});
const t0 = Date.now();
const train = TrainConfig.parse(JSON.parse(process.env.TRAIN ?? "{}"));
const s = await runExperiment(ExperimentConfig.parse({ seeds: JSON.parse(process.env.SEEDS ?? "[1,2,3]"), train }), {
  env, createPolicy: mk, voters: statisticalVoters, train: suite.train, dev: suite.dev, heldout: suite.heldout, evolution: evo,
});
const f = (x: number) => (100 * x).toFixed(1);
console.log("ms", Date.now() - t0, "initial train", f(s.initial.train.avgAt3), "held", f(s.initial.heldout.avgAt3), "suite", JSON.stringify({ l: s.suite.locality, c: s.suite.complementarity, n: s.suite.nonstationarity }));
for (const a of s.arms) console.log(a.name.padEnd(24), "roll", a.rollouts.toFixed(0), "train avg", f(a.h0.train.avgAt3), "pass", f(a.h0.train.passAt3), "held avg", f(a.h0.heldout.avgAt3), "pass", f(a.h0.heldout.passAt3),
  a.rank1 ? `r1 gap before ${f(a.rank1.before.heldout.passAt3 - s.initial.heldout.passAt3)} after ${f(a.rank1.after.heldout.passAt3 - a.h0.heldout.passAt3)}` : "",
  "seeds", a.perSeed.map((p) => f(p.h0.train.avgAt3) + "/" + f(p.h0.heldout.avgAt3)).join(" "), a.perSeed[0]?.routerAccuracy ? JSON.stringify(a.perSeed[0].routerAccuracy) : "", JSON.stringify(a.perSeed[0]?.rescue));
