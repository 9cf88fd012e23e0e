import { createRng, rolloutsIn, type Policy, type Protocol } from "@harness-s/core";
import { evolvePool, EvolutionConfig, mutationProposer } from "@harness-s/core/evolution";
import { statisticalVoters } from "@harness-s/core/voting";
import type { ExperimentDeps, SeedInstance } from "@harness-s/core/experiment";
import { EmbeddedEnvironment } from "./environment.ts";
import { embeddedH0, embeddedVocabulary } from "./h0.ts";
import { embeddedPolicyPrior } from "./prior.ts";
import { buildSuite, familyByName } from "./suite.ts";
import { LogLinearPolicy } from "@harness-s/policy";

export interface EmbeddedSettings {
  cueRate: number;
  cueStrength: number;
  /** Share one suite instance and pool across all seeds instead of one per seed. */
  fixedSuite: boolean;
  /** The suite and evolution seed used when `fixedSuite` is set. */
  suiteSeed: number;
  /** "validation" evaluates on a held-back train combination instead of the test held-out split. */
  protocol: Protocol;
  /** How often a harness edit misleads outside its area (`SuiteOptions.sideEffects`; 0: never). */
  sideEffects?: number;
  /** Updates over which the policy's hint bonus halves (`LogLinearOptions.cueHalfLife`; unset: fixed). */
  cueHalfLife?: number;
  /** Siblings evolution keeps (default 8); see {@link evolutionForPoolSize}. */
  poolSize?: number;
}

export const defaultEmbeddedSettings: EmbeddedSettings = {
  cueRate: 0.2,
  cueStrength: 5,
  fixedSuite: false,
  suiteSeed: 2026,
  protocol: "test",
};

/**
 * Evolution settings that can fill a pool of `poolSize` siblings: up to 8 keep the defaults (5
 * rounds, ≤ 2 per direction); larger pools allow more per direction and, past 16, more rounds,
 * since one direction's rounds yield at most one kept edit each. The pool may come out smaller
 * than asked when evolution keeps fewer edits (reported as the pool's actual size).
 *
 * @example
 * evolutionForPoolSize(32); // { poolSize: 32, maxPerDirection: 8, rounds: 10 }
 */
export function evolutionForPoolSize(poolSize: number): Partial<EvolutionConfig> {
  if (poolSize <= 8) return { poolSize };
  return { poolSize, maxPerDirection: Math.ceil(poolSize / 4), rounds: Math.max(5, Math.ceil((poolSize * 10) / 32)) };
}

/** Seed instances built in this process, any setup's, most recent last: the most kept ({@link builtHere}). */
const BUILT_HERE_MAX = 32;
const builtHere = new Map<string, Promise<SeedInstance>>();

/**
 * A seed's instance as these settings build it in this process, built once for every setup that asks (seconds of CPU
 * each: the suite and its pool's evolution, deterministic in the settings and the seed). A failed build is forgotten.
 */
function sharedBuild(settings: EmbeddedSettings, key: number, build: () => Promise<SeedInstance>) {
  const id = JSON.stringify([key, Object.entries(settings).sort(([a], [b]) => a.localeCompare(b))]);
  let built = builtHere.get(id);
  if (!built) {
    built = build();
    built.catch(() => builtHere.delete(id));
    builtHere.set(id, built);
    if (builtHere.size > BUILT_HERE_MAX) builtHere.delete(builtHere.keys().next().value!);
  }
  return built;
}

/**
 * A seed's suite as these settings build it: its train, dev and held-out tasks, the instance's own, without the pool
 * the instance evolves for them (what serving the suite's tasks needs: `env-serve --env embedded`).
 */
export function embeddedSuiteTasks(
  settings: EmbeddedSettings,
  seed: number,
): Pick<SeedInstance, "train" | "dev" | "heldout"> {
  const suite = buildSuite({
    seed,
    cueRate: settings.cueRate,
    protocol: settings.protocol,
    sideEffects: settings.sideEffects ?? 0,
  });
  return { train: suite.train, dev: suite.dev, heldout: suite.heldout };
}

/**
 * The composition root of the embedded default: environment, policy factory, and for each seed
 * a suite instance with its own evolved, frozen sibling pool (or one shared instance). Setups
 * with the same settings share the instances built in this process.
 */
export function embeddedSetup(
  settings: EmbeddedSettings,
  onEvolution?: (seed: number, done: number, total: number) => void,
  /** Builds an instance elsewhere (e.g. {@link offThreadInstances}); default: here, in process. */
  buildElsewhere?: (settings: EmbeddedSettings, seed: number) => Promise<SeedInstance>,
): Omit<ExperimentDeps, "onProgress"> {
  const env = new EmbeddedEnvironment();
  const createPolicy = (_seed: number): Policy =>
    new LogLinearPolicy({
      prior: embeddedPolicyPrior(),
      cueStrength: settings.cueStrength,
      ...(settings.cueHalfLife ? { cueHalfLife: settings.cueHalfLife } : {}),
    });
  const facts = embeddedVocabulary().facts;
  const cache = new Map<number, Promise<SeedInstance>>();
  const build = async (suiteSeed: number): Promise<SeedInstance> => {
    const suite = embeddedSuiteTasks(settings, suiteSeed);
    const initial = createPolicy(0);
    const evolution = await evolvePool(
      EvolutionConfig.parse(settings.poolSize ? evolutionForPoolSize(settings.poolSize) : {}),
      {
        base: embeddedH0,
        devTasks: suite.dev,
        proposer: mutationProposer,
        rng: createRng(suiteSeed),
        runRollout: rolloutsIn(env, initial),
        vocabulary: (f) => ({ tools: familyByName(f).tools, facts, roles: familyByName(f).toolRoles }),
        onProgress: (done, total) => onEvolution?.(suiteSeed, done, total),
      },
    );
    return { train: suite.train, dev: suite.dev, heldout: suite.heldout, evolution };
  };
  const instance = (seed: number) => {
    const key = settings.fixedSuite ? settings.suiteSeed : seed;
    if (!cache.has(key))
      cache.set(key, buildElsewhere ? buildElsewhere(settings, key) : sharedBuild(settings, key, () => build(key)));
    return cache.get(key)!;
  };
  return { env, createPolicy, voters: statisticalVoters, instance };
}

/** The embedded setup of each protocol, built on first use: what a coordinator needs per run. */
export type SetupForProtocol = (protocol: Protocol) => Omit<ExperimentDeps, "onProgress">;

/**
 * One embedded setup per protocol, sharing every other setting.
 *
 * @example
 * const setupFor = embeddedSetups(defaultEmbeddedSettings);
 * const deps = setupFor(record.request.protocol);
 */
export function embeddedSetups(
  settings: Omit<EmbeddedSettings, "protocol">,
  buildElsewhere?: (settings: EmbeddedSettings, seed: number) => Promise<SeedInstance>,
): SetupForProtocol {
  const cache = new Map<Protocol, Omit<ExperimentDeps, "onProgress">>();
  return (protocol) => {
    if (!cache.has(protocol)) cache.set(protocol, embeddedSetup({ ...settings, protocol }, undefined, buildElsewhere));
    return cache.get(protocol)!;
  };
}
