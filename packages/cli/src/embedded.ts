import {
  createRng,
  evolvePool,
  EvolutionConfig,
  mutationProposer,
  runEpisode,
  statisticalVoters,
  type EvolutionResult,
  type ExperimentDeps,
  type Policy,
} from "@harness-s/core";
import { buildSuite, EmbeddedEnvironment, embeddedH0, embeddedPolicyPrior, embeddedVocabulary, familyByName, type Suite } from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";

export interface EmbeddedSettings {
  cueRate: number;
  cueStrength: number;
  evolutionSeed: number;
}

export const defaultEmbeddedSettings: EmbeddedSettings = { cueRate: 0.2, cueStrength: 5, evolutionSeed: 1 };

/** The composition root of the embedded default: suite, environment, policy, evolved pool. */
export async function embeddedSetup(
  settings: EmbeddedSettings,
  onEvolution?: (done: number, total: number) => void,
): Promise<{ suite: Suite; deps: Omit<ExperimentDeps, "onProgress">; evolution: EvolutionResult }> {
  const suite = buildSuite({ cueRate: settings.cueRate });
  const env = new EmbeddedEnvironment();
  const createPolicy = (_seed: number): Policy => new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: settings.cueStrength });
  const initial = createPolicy(0);
  const facts = embeddedVocabulary().facts;
  const evolution = await evolvePool(EvolutionConfig.parse({}), {
    base: embeddedH0,
    devTasks: suite.dev,
    proposer: mutationProposer,
    rng: createRng(settings.evolutionSeed),
    runRollout: (t, h, s) => runEpisode(t, h, s, { env, policy: initial }),
    vocabulary: (f) => ({ tools: familyByName(f).tools, facts, roles: familyByName(f).toolRoles }),
    onProgress: onEvolution,
  });
  return {
    suite,
    evolution,
    deps: { env, createPolicy, voters: statisticalVoters, train: suite.train, dev: suite.dev, heldout: suite.heldout, evolution },
  };
}
