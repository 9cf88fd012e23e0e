import { armDefinition } from "./arms.ts";
import { mean, spearman } from "../metrics/stats.ts";
import type { ExperimentConfig, SeedInstance } from "./experiment-config.ts";
import type { ArmSeedResult, ArmSummary, ExperimentSummary, SeedBaseline } from "./summary.ts";

/**
 * (1 − Spearman ρ) / 2 between the siblings' rescue utilities at evolution time (step 0) and at
 * the last re-anchoring, over siblings measured at both; empty when nothing was re-anchored.
 */
function nonstationarityOf(result: ArmSeedResult): number[] {
  const first = result.utilities[0];
  const last = result.utilities[result.utilities.length - 1];
  if (!first || !last || result.utilities.length < 2) return [];
  const ids = Object.keys(result.siblingDirections).filter(
    (id) => Number.isFinite(last.values[id]) && Number.isFinite(first.values[id]),
  );
  const rho = spearman(
    ids.map((id) => first.values[id]!),
    ids.map((id) => last.values[id]!),
  );
  return [(1 - rho) / 2];
}

/** What a summary keeps of each seed's benchmark instance and evolved pool. */
export interface SeedFacts {
  seed: number;
  poolVersion: string;
  locality: number;
  complementarity: number;
  poolSize: number;
  repairSets: unknown;
  h0DevFailures: number;
  evolutionRollouts: number;
}

export interface SummaryParts {
  perArm: ReadonlyMap<string, readonly ArmSeedResult[]>;
  baselines: readonly SeedBaseline[];
  seedFacts: readonly SeedFacts[];
}

/**
 * The experiment summary from every seed's baseline and every (arm, seed) result: means per arm,
 * Rank-1 before and after, and the suite figures (locality, complementarity, nonstationarity).
 *
 * @example
 * const summary = summarise(config, { perArm, baselines, instances });
 */
export function summarise(
  config: ExperimentConfig,
  runs: {
    perArm: ReadonlyMap<string, ArmSeedResult[]>;
    baselines: readonly SeedBaseline[];
    instances: ReadonlyMap<number, SeedInstance>;
  },
): ExperimentSummary {
  const seedFacts = config.seeds.map((seed): SeedFacts => {
    const e = runs.instances.get(seed)!.evolution;
    return {
      seed,
      poolVersion: e.pool.version,
      locality: e.locality,
      complementarity: e.complementarity,
      poolSize: e.pool.siblings.length,
      repairSets: e.repairSets,
      h0DevFailures: e.h0Failures.length,
      evolutionRollouts: e.rolloutsSpent,
    };
  });
  return assembleSummary(config, { perArm: runs.perArm, baselines: runs.baselines, seedFacts });
}

/**
 * The summary from its per-seed parts, in the order given: every figure is a mean over seeds, so
 * parts of runs on disjoint seeds assemble into the summary of one run on all of them.
 */
export function assembleSummary(config: ExperimentConfig, parts: SummaryParts): ExperimentSummary {
  const { perArm, seedFacts } = parts;
  const rank1Before = new Map(parts.baselines.map((b) => [b.seed, b.rank1.heldout]));
  const initialPerSeed: ExperimentSummary["initialPerSeed"] = parts.baselines.map((b) => ({
    seed: b.seed,
    h0: b.h0,
    rank1: b.rank1,
    behaviours: b.behaviours,
  }));
  const initialBehaviours = parts.baselines.map((b) => b.behaviours);
  const nonstationarity = (perArm.get("harness-s") ?? []).flatMap(nonstationarityOf);
  const avgScore = (xs: { passAt3: number; avgAt3: number }[]) => ({
    passAt3: mean(xs.map((x) => x.passAt3)),
    avgAt3: mean(xs.map((x) => x.avgAt3)),
  });
  const arms: ArmSummary[] = config.arms.map((name) => {
    const runs = [...(perArm.get(name) ?? [])];
    const summary: ArmSummary = {
      name,
      rollouts: mean(runs.map((r) => r.rollouts)),
      h0: { train: avgScore(runs.map((r) => r.h0.train)), heldout: avgScore(runs.map((r) => r.h0.heldout)) },
      perSeed: runs,
    };
    if (armDefinition(name).rank1) {
      summary.rank1 = {
        before: { heldout: avgScore(runs.map((r) => rank1Before.get(r.seed)!)) },
        after: { heldout: avgScore(runs.map((r) => r.rank1!.heldout)) },
      };
    }
    return summary;
  });
  const behaviourNames = [...new Set(initialBehaviours.flatMap((b) => Object.keys(b)))];
  return {
    seeds: config.seeds,
    config: { ...config, train: config.train } as Record<string, unknown>,
    poolVersions: Object.fromEntries(seedFacts.map((f) => [String(f.seed), f.poolVersion])),
    initial: {
      train: avgScore(initialPerSeed.map((s) => s.h0.train)),
      heldout: avgScore(initialPerSeed.map((s) => s.h0.heldout)),
      rank1: { heldout: avgScore(initialPerSeed.map((s) => s.rank1.heldout)) },
      behaviours: Object.fromEntries(behaviourNames.map((b) => [b, mean(initialBehaviours.map((x) => x[b] ?? 0))])),
    },
    initialPerSeed,
    arms,
    suite: {
      locality: mean(seedFacts.map((f) => f.locality)),
      complementarity: mean(seedFacts.map((f) => f.complementarity)),
      nonstationarity: mean(nonstationarity),
      details: {
        localityDefinition:
          "mean pairwise Jaccard overlap of the siblings' repair sets on dev (lower = more local), mean over the seeds' pools",
        complementarityDefinition:
          "dev H0 failures repaired by the pool ÷ by its best single sibling, mean over the seeds' pools",
        nonstationarityDefinition:
          "(1 − Spearman ρ of sibling rescue utilities at the start vs the end of harness-s training) / 2, mean over seeds",
        nonstationarityPerSeed: nonstationarity,
        localityPerSeed: seedFacts.map((f) => f.locality),
        complementarityPerSeed: seedFacts.map((f) => f.complementarity),
        poolSizes: seedFacts.map((f) => f.poolSize),
        repairSets: Object.fromEntries(seedFacts.map((f) => [String(f.seed), f.repairSets])),
        h0DevFailures: seedFacts.map((f) => f.h0DevFailures),
        evolutionRollouts: seedFacts.map((f) => f.evolutionRollouts),
      },
    },
  };
}
