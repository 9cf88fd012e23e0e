import { mean, spearman } from "../metrics/stats.ts";
import type { ExperimentConfig, SeedInstance } from "./run-experiment.ts";
import type { ArmSeedResult, ArmSummary, ExperimentSummary, SeedBaseline } from "./summary.ts";

/**
 * (1 − Spearman ρ) / 2 between the siblings' rescue utilities at evolution time (step 0) and at
 * the last re-anchoring, over siblings measured at both; empty when nothing was re-anchored.
 */
function nonstationarityOf(result: ArmSeedResult): number[] {
  const first = result.utilities[0];
  const last = result.utilities[result.utilities.length - 1];
  if (!first || !last || result.utilities.length < 2) return [];
  const ids = Object.keys(result.siblingDirections).filter((id) => Number.isFinite(last.values[id]) && Number.isFinite(first.values[id]));
  const rho = spearman(ids.map((id) => first.values[id]!), ids.map((id) => last.values[id]!));
  return [(1 - rho) / 2];
}

/**
 * The experiment summary from every seed's baseline and every (arm, seed) result: means per arm,
 * Rank-1 before and after, and the suite figures (locality, complementarity, nonstationarity).
 */
export function summarise(
  config: ExperimentConfig,
  runs: { perArm: ReadonlyMap<string, ArmSeedResult[]>; baselines: readonly SeedBaseline[]; instances: ReadonlyMap<number, SeedInstance> },
): ExperimentSummary {
  const { perArm, instances } = runs;
  const rank1Before = new Map(runs.baselines.map((b) => [b.seed, b.rank1.heldout]));
  const initialPerSeed: ExperimentSummary["initialPerSeed"] = runs.baselines.map((b) => ({ seed: b.seed, h0: b.h0, rank1: b.rank1 }));
  const initialBehaviours = runs.baselines.map((b) => b.behaviours);
  const nonstationarity = (perArm.get("harness-s") ?? []).flatMap(nonstationarityOf);
  const avgScore = (xs: { passAt3: number; avgAt3: number }[]) => ({ passAt3: mean(xs.map((x) => x.passAt3)), avgAt3: mean(xs.map((x) => x.avgAt3)) });
  const arms: ArmSummary[] = config.arms.map((name) => {
    const runs = perArm.get(name)!;
    const summary: ArmSummary = {
      name,
      rollouts: mean(runs.map((r) => r.rollouts)),
      h0: { train: avgScore(runs.map((r) => r.h0.train)), heldout: avgScore(runs.map((r) => r.h0.heldout)) },
      perSeed: runs,
    };
    if (name.startsWith("harness-s")) {
      summary.rank1 = {
        before: { heldout: avgScore(runs.map((r) => rank1Before.get(r.seed)!)) },
        after: { heldout: avgScore(runs.map((r) => r.rank1!.heldout)) },
      };
    }
    return summary;
  });
  const behaviourNames = [...new Set(initialBehaviours.flatMap((b) => Object.keys(b)))];
  const evolutions = config.seeds.map((seed) => instances.get(seed)!.evolution);
  const poolVersions = Object.fromEntries(config.seeds.map((seed) => [String(seed), instances.get(seed)!.evolution.pool.version]));
  return {
    seeds: config.seeds,
    config: { ...config, train: config.train } as Record<string, unknown>,
    poolVersions,
    initial: {
      train: avgScore(initialPerSeed.map((s) => s.h0.train)),
      heldout: avgScore(initialPerSeed.map((s) => s.h0.heldout)),
      rank1: { heldout: avgScore(initialPerSeed.map((s) => s.rank1.heldout)) },
      behaviours: Object.fromEntries(behaviourNames.map((b) => [b, mean(initialBehaviours.map((x) => x[b] ?? 0))])),
    },
    initialPerSeed,
    arms,
    suite: {
      locality: mean(evolutions.map((e) => e.locality)),
      complementarity: mean(evolutions.map((e) => e.complementarity)),
      nonstationarity: mean(nonstationarity),
      details: {
        localityDefinition: "mean pairwise Jaccard overlap of the siblings' repair sets on dev (lower = more local), mean over the seeds' pools",
        complementarityDefinition: "dev H0 failures repaired by the pool ÷ by its best single sibling, mean over the seeds' pools",
        nonstationarityDefinition: "(1 − Spearman ρ of sibling rescue utilities at the start vs the end of harness-s training) / 2, mean over seeds",
        nonstationarityPerSeed: nonstationarity,
        localityPerSeed: evolutions.map((e) => e.locality),
        complementarityPerSeed: evolutions.map((e) => e.complementarity),
        poolSizes: evolutions.map((e) => e.pool.siblings.length),
        repairSets: Object.fromEntries(config.seeds.map((seed) => [String(seed), instances.get(seed)!.evolution.repairSets])),
        h0DevFailures: evolutions.map((e) => e.h0Failures.length),
        evolutionRollouts: evolutions.map((e) => e.rolloutsSpent),
      },
    },
  };
}
