import { describe, expect, it } from "vitest";
import {
  EvolutionConfig,
  evolvePool,
  mutationProposer,
  selectByCoverage,
  type CandidateRecord,
} from "@harness-s/core/evolution";
import { createRng, runEpisode } from "@harness-s/core";
import {
  EmbeddedEnvironment,
  buildSuite,
  embeddedH0,
  embeddedPolicyPrior,
  embeddedVocabulary,
  familyByName,
} from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";
import { makeSpec } from "../factories.ts";

const candidate = (id: string, direction: string, repairs: string[], score = repairs.length): CandidateRecord => ({
  spec: makeSpec({ id, provenance: { direction: direction as "recovery" } }),
  repairs,
  breaks: [],
  score,
  kept: true,
});

describe("selectByCoverage", () => {
  it("greedily covers H0's failures, at most maxPerDirection per direction", () => {
    const cands = [
      candidate("a", "recovery", ["t1", "t2", "t3"]),
      candidate("b", "recovery", ["t1", "t2"]),
      candidate("c", "recovery", ["t9"]),
      candidate("d", "contract", ["t4"]),
    ];
    const chosen = selectByCoverage(
      cands,
      ["t1", "t2", "t3", "t4", "t9"],
      EvolutionConfig.parse({ poolSize: 3, maxPerDirection: 2 }),
    );
    expect(chosen.map((c) => c.spec.id)).toEqual(["a", "c", "d"]);
  });
});

describe("evolvePool (embedded)", () => {
  it("builds a frozen, versioned pool of local, complementary siblings, reproducibly", async () => {
    const suite = buildSuite({});
    const env = new EmbeddedEnvironment();
    const policy = new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: 5 });
    const facts = embeddedVocabulary().facts;
    const evolve = () =>
      evolvePool(EvolutionConfig.parse({ rounds: 3, candidatesPerRound: 6, trials: 2 }), {
        base: embeddedH0,
        devTasks: suite.dev,
        proposer: mutationProposer,
        rng: createRng(1),
        runRollout: (t, h, s) => runEpisode(t, h, s, { env, policy }),
        vocabulary: (f) => ({ tools: familyByName(f).tools, facts, roles: familyByName(f).toolRoles }),
      });
    const a = await evolve();
    expect(a.pool.siblings.length).toBeGreaterThanOrEqual(6);
    for (const s of a.pool.siblings) {
      expect(a.repairSets[s.id]!.length).toBeGreaterThanOrEqual(2);
      expect(s.provenance.proposer).toBe("embedded-mutation");
      expect(s.provenance.parent).not.toBeNull();
    }
    expect(a.locality).toBeLessThan(0.5);
    expect(a.complementarity).toBeGreaterThan(1);
    expect(Object.keys(a.initialProfiles).sort()).toEqual(["h0", ...a.pool.siblings.map((s) => s.id)].sort());
    expect((await evolve()).pool.version).toBe(a.pool.version);
  });

  it("measures each sibling's harm on the dev tasks H0 solves, and finds more where edits have side effects", async () => {
    // Prepare
    const env = new EmbeddedEnvironment();
    const policy = new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: 5 });
    const facts = embeddedVocabulary().facts;
    const evolveOn = (sideEffects: number) =>
      evolvePool(EvolutionConfig.parse({ rounds: 3, candidatesPerRound: 6, trials: 2 }), {
        base: embeddedH0,
        devTasks: buildSuite({ sideEffects }).dev,
        proposer: mutationProposer,
        rng: createRng(1),
        runRollout: (t, h, s) => runEpisode(t, h, s, { env, policy }),
        vocabulary: (f) => ({ tools: familyByName(f).tools, facts, roles: familyByName(f).toolRoles }),
      });
    // Act
    const [plain, sided] = [await evolveOn(0), await evolveOn(1)];
    // Assess: one record per sibling, rate = broken share of H0's solved tasks
    const rates = (e: typeof plain) => e.pool.siblings.map((s) => e.harm.siblings[s.id]!.harmRate);
    for (const e of [plain, sided]) {
      expect(Object.keys(e.harm.siblings).sort()).toEqual(e.pool.siblings.map((s) => s.id).sort());
      for (const h of Object.values(e.harm.siblings))
        expect(h.harmRate).toBeCloseTo(h.broken.length / e.harm.h0Solved, 10);
    }
    const meanOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(meanOf(rates(sided))).toBeGreaterThan(meanOf(rates(plain)) + 0.05);
  });
});
