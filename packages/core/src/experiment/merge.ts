import { ValidationError } from "../errors.ts";
import { differingKeys, firstRepeated } from "../util/compare.ts";
import { ExperimentConfig } from "./run-experiment.ts";
import { assembleSummary, type SeedFacts } from "./summarise.ts";
import type { ArmSeedResult, ExperimentSummary, SeedBaseline } from "./summary.ts";

const perSeedNumber = (details: Record<string, unknown>, key: string, i: number): number => {
  const xs = details[key];
  if (!Array.isArray(xs) || typeof xs[i] !== "number")
    throw new ValidationError("summary", [`suite.details.${key}[${i}] is missing`]);
  return xs[i] as number;
};

/**
 * One summary from runs of the same configuration on disjoint seeds (e.g. seeds 1–5 on one
 * machine and 6–25 on another), equal to the summary of one run on all those seeds.
 *
 * @example
 * const pooled = mergeSummaries([seeds1to5, seeds6to25]);
 */
export function mergeSummaries(summaries: readonly ExperimentSummary[]): ExperimentSummary {
  if (summaries.length === 0) throw new ValidationError("summaries", ["nothing to merge"]);
  const { seeds: _, ...shape } = summaries[0]!.config;
  const problems: string[] = [];
  summaries.forEach((s, i) => {
    const { seeds: __, ...other } = s.config;
    for (const key of differingKeys(shape, other)) problems.push(`run ${i + 1} differs from run 1 in config.${key}`);
  });
  const seeds = summaries.flatMap((s) => s.seeds);
  const repeated = firstRepeated(seeds);
  if (repeated !== undefined) problems.push(`seed ${repeated} is in more than one run`);
  if (problems.length) throw new ValidationError("runs to merge", problems);

  const config = ExperimentConfig.parse({ ...shape, seeds });
  const baselines: SeedBaseline[] = summaries.flatMap((s) =>
    s.initialPerSeed.map((b) => ({ ...b, behaviours: b.behaviours ?? s.initial.behaviours })),
  );
  const seedFacts: SeedFacts[] = summaries.flatMap((s) =>
    s.seeds.map((seed, i) => ({
      seed,
      poolVersion: s.poolVersions[String(seed)] ?? "",
      locality: perSeedNumber(s.suite.details, "localityPerSeed", i),
      complementarity: perSeedNumber(s.suite.details, "complementarityPerSeed", i),
      poolSize: perSeedNumber(s.suite.details, "poolSizes", i),
      repairSets: (s.suite.details.repairSets as Record<string, unknown> | undefined)?.[String(seed)],
      h0DevFailures: perSeedNumber(s.suite.details, "h0DevFailures", i),
      evolutionRollouts: perSeedNumber(s.suite.details, "evolutionRollouts", i),
    })),
  );
  const perArm = new Map<string, ArmSeedResult[]>(
    config.arms.map((name) => [name, summaries.flatMap((s) => s.arms.find((a) => a.name === name)?.perSeed ?? [])]),
  );
  return assembleSummary(config, { perArm, baselines, seedFacts });
}
