import { createRng, evolvePool, EvolutionConfig, mutationProposer, runEpisode } from "@harness-s/core";
import { buildSuite, EmbeddedEnvironment, embeddedH0, embeddedPolicyPrior, familyByName, embeddedVocabulary } from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";
const suite = buildSuite({});
const env = new EmbeddedEnvironment();
const policy = new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: 5 });
const facts = embeddedVocabulary().facts;
const t0 = Date.now();
const r = await evolvePool(EvolutionConfig.parse({}), {
  base: embeddedH0, devTasks: suite.dev, proposer: mutationProposer, rng: createRng(1),
  runRollout: (t, h, s) => runEpisode(t, h, s, { env, policy }),
  vocabulary: (f) => ({ tools: familyByName(f).tools, facts, roles: familyByName(f).toolRoles }),
});
console.log("ms", Date.now() - t0, "spent", r.rolloutsSpent, "h0Failures", r.h0Failures.length, "loc", r.locality.toFixed(2), "compl", r.complementarity.toFixed(2));
for (const s of r.pool.siblings) console.log(s.id, JSON.stringify({ po: s.postObservation.map((t) => `${t.on}->${t.hint}`), recon: s.recon.first, gate: s.commitGate, pre: s.preAction.map(p=>`${p.action}?${p.requires}->${p.hint}`), budget: s.budget }), "repairs", r.repairSets[s.id]!.length);
for (const c of r.candidates) console.log("cand", c.spec.provenance.direction, c.score.toFixed(2), c.repairs.length, c.kept, JSON.stringify(c.spec.postObservation.map((t) => `${t.on}->${t.hint}`)), JSON.stringify(c.spec.commitGate));
