import { z } from "zod";
import { createPool, type HarnessPool } from "../harness/pool.ts";
import { describeHooks, parseHarnessSpec, type HarnessSpec } from "../harness/spec.ts";
import { jaccard, mean } from "../metrics/stats.ts";
import type { ProfileSet } from "../profile/profile.ts";
import type { Task } from "../task.ts";
import { ValidationError } from "../errors.ts";
import type { EvolutionConfig, CandidateRecord, EvolutionDeps, EvolutionStop, Measured } from "./evolution-types.ts";
import { measureCandidate, measureOnDev, type Measure, type Meter } from "./measure.ts";
import { failureEvidence, failureSignals, profilesFrom, selectByCoverage } from "./pool-selection.ts";

export * from "./evolution-types.ts";

export interface EvolutionResult {
  pool: HarnessPool;
  candidates: CandidateRecord[];
  /** Dev tasks H0 fails (rate ≤ 1 − margin) and the pool's repair sets over them. */
  h0Failures: string[];
  repairSets: Record<string, string[]>;
  locality: number;
  complementarity: number;
  initialProfiles: ProfileSet;
  rolloutsSpent: number;
  /** Side effects of each sibling on the dev tasks H0 solves (see {@link SiblingHarm}). */
  harm: PoolHarm;
  /** Set when a budget ended evolution before its last round (the pool is chosen from what was measured). */
  stopped?: EvolutionStop;
}

/**
 * What a sibling breaks: of the dev tasks H0 solves (success rate ≥ the repair margin), the share
 * it fails (its rate lower by at least the margin: the candidate's `breaks`), and the mean
 * success it loses on them (continuous, so small losses show too).
 */
export const SiblingHarm = z.object({ harmRate: z.number(), broken: z.array(z.string()), successLost: z.number() });
export type SiblingHarm = z.infer<typeof SiblingHarm>;
export const PoolHarm = z.object({ h0Solved: z.number().int(), siblings: z.record(z.string(), SiblingHarm) });
export type PoolHarm = z.infer<typeof PoolHarm>;

function harmOf(h0: Measured, sibling: Measured, solved: readonly string[], margin: number): SiblingHarm {
  const broken = solved.filter((t) => h0.rates.get(t)! - sibling.rates.get(t)! >= margin);
  const lost = solved.map((t) => Math.max(0, h0.rates.get(t)! - sibling.rates.get(t)!));
  return { harmRate: solved.length ? broken.length / solved.length : 0, broken, successLost: mean(lost) };
}

/**
 * Directional harness evolution: per direction, rounds of proposals from the current best edit,
 * aimed at the events that accompany the current parent's failures (not only H0's);
 * each candidate is measured on the dev tasks with paired trials against H0; a round's best
 * proposal becomes the next parent when it gains success on H0's failures (net of losses), and
 * is eligible for the pool when it repairs at least `minRepairs` of them. The pool is then chosen greedily for coverage
 * of H0's failures (at most `maxPerDirection` per direction) and frozen.
 *
 * @example
 * const { pool } = await evolvePool(EvolutionConfig.parse({}), { base: h0, devTasks, runRollout, proposer: mutationProposer, vocabulary, rng });
 */
export async function evolvePool(config: EvolutionConfig, deps: EvolutionDeps): Promise<EvolutionResult> {
  const meter: Meter = { spent: 0 };
  const firstCost = deps.devTasks.length * config.trials;
  if (config.maxRollouts !== undefined && config.maxRollouts < firstCost)
    throw new ValidationError("evolution budget", [
      `maxRollouts: ${config.maxRollouts} cannot pay for H0's own measurement (${deps.devTasks.length} dev tasks × ${config.trials} trials = ${firstCost})`,
    ]);
  const measure = (spec: HarnessSpec, tasks: readonly Task[] = deps.devTasks) =>
    measureOnDev(spec, tasks, config, deps, meter);
  const h0 = await measure(deps.base);
  const h0Failures = deps.devTasks.filter((t) => h0.rates.get(t.id)! <= 1 - config.repairMargin).map((t) => t.id);
  const compare = comparer(h0, deps.devTasks, new Set(h0Failures), config.repairMargin);
  const candidates: Candidate[] = [];
  const totalSteps = config.directions.length * config.rounds;
  let done = 0;
  for (const direction of config.directions) {
    candidates.push(
      ...(await evolveDirection(direction, config, deps, h0, measure, compare, meter, () =>
        deps.onProgress?.(++done, totalSteps),
      )),
    );
    if (meter.stopped) break;
  }
  return {
    ...frozenPool(config, deps, h0, h0Failures, candidates, meter.spent),
    ...(meter.stopped ? { stopped: meter.stopped } : {}),
  };
}

/**
 * The evolution result of a pool given as it is (hand-written, or evolved elsewhere): no
 * candidates, repair sets or harm measured; its initial profiles empty until someone measures them.
 *
 * @example
 * const instance = { train, dev, heldout, evolution: givenPool(createPool("dbbench", h0, siblings)) };
 */
export function givenPool(pool: HarnessPool): EvolutionResult {
  return {
    pool,
    candidates: [],
    h0Failures: [],
    repairSets: {},
    locality: 0,
    complementarity: 0,
    initialProfiles: {},
    rolloutsSpent: 0,
    harm: { h0Solved: 0, siblings: {} },
  };
}

type Candidate = CandidateRecord & { measured: Measured };
type Compare = (m: Measured) => { repairs: string[]; breaks: string[]; score: number };

/** Repairs and breaks against H0 (by the margin), and the continuous score a round climbs on. */
function comparer(h0: Measured, devTasks: readonly Task[], failing: ReadonlySet<string>, margin: number): Compare {
  return (m) => {
    const repairs = devTasks.filter((t) => m.rates.get(t.id)! - h0.rates.get(t.id)! >= margin).map((t) => t.id);
    const breaks = devTasks.filter((t) => h0.rates.get(t.id)! - m.rates.get(t.id)! >= margin).map((t) => t.id);
    // Continuous: success gained on H0's failures minus half the success lost anywhere, so an edit
    // that only makes partial progress (the first of two needed hooks) can still be climbed on.
    let score = 0;
    for (const t of devTasks) {
      const d = m.rates.get(t.id)! - h0.rates.get(t.id)!;
      if (d > 0 && failing.has(t.id)) score += d;
      if (d < 0) score += 0.5 * d;
    }
    return { repairs, breaks, score };
  };
}

/** One direction's rounds: each round's best proposal (if it does not lose score) becomes the parent. */
async function evolveDirection(
  direction: EvolutionConfig["directions"][number],
  config: EvolutionConfig,
  deps: EvolutionDeps,
  h0: Measured,
  measure: Measure,
  compare: Compare,
  meter: Meter,
  onRound: () => void,
): Promise<Candidate[]> {
  const kept: Candidate[] = [];
  let parent = deps.base;
  let parentScore = 0;
  let parentRollouts = h0.rollouts;
  for (let round = 0; round < config.rounds; round++) {
    const proposals = await deps.proposer.propose({
      parent,
      direction,
      signals: failureSignals(parentRollouts, deps.vocabulary),
      evidence: failureEvidence(parentRollouts),
      count: config.candidatesPerRound,
      rng: deps.rng.fork(`propose:${direction}`),
      round,
    });
    if (proposals.length === 0 && deps.proposer.exhausted?.()) meter.stopped = "proposer budget spent";
    const parentFailures = [...new Set(parentRollouts.filter((r) => !r.success).map((r) => r.taskId))];
    let best: Candidate | undefined;
    for (const spec of proposals) {
      const measured = await measureCandidate(spec, config, deps, h0, parentFailures, measure, meter);
      if (!measured) {
        if (meter.stopped) break;
        continue;
      }
      const c = { spec, ...compare(measured), kept: false, measured };
      if (c.score >= parentScore + config.minGain && (!best || c.score > best.score)) best = c;
    }
    if (best) {
      best.kept = best.repairs.length >= config.minRepairs;
      kept.push(best);
      parent = best.spec;
      parentScore = best.score;
      parentRollouts = best.measured.rollouts;
    }
    onRound();
    if (meter.stopped) break;
  }
  return kept;
}

/** The pool chosen for coverage and frozen, with its suite figures, initial profiles and harm. */
function frozenPool(
  config: EvolutionConfig,
  deps: EvolutionDeps,
  h0: Measured,
  h0Failures: string[],
  candidates: readonly Candidate[],
  spent: number,
): EvolutionResult {
  const chosen = selectByCoverage(
    candidates.filter((c) => c.kept),
    h0Failures,
    config,
  );
  const siblings = chosen.map((c, i) =>
    parseHarnessSpec({
      ...c.spec,
      id: `sib-${c.spec.provenance.direction}-${i + 1}`,
      description: `${c.spec.provenance.direction}: ${describeHooks(c.spec)}`,
      provenance: { ...c.spec.provenance, parent: deps.base.id, motivatingTasks: c.repairs },
    }),
  );
  const pool = createPool("embedded-evolved", deps.base, siblings, { evolutionRollouts: spent });
  const repairSets = Object.fromEntries(siblings.map((s, i) => [s.id, chosen[i]!.repairs]));
  const sets = Object.values(repairSets).map((r) => new Set(r));
  const pairs: number[] = [];
  for (let i = 0; i < sets.length; i++)
    for (let j = i + 1; j < sets.length; j++) pairs.push(jaccard(sets[i]!, sets[j]!));
  const union = new Set(Object.values(repairSets).flat()).size;
  const bestSingle = Math.max(0, ...sets.map((s) => s.size));
  const solved = deps.devTasks.filter((t) => h0.rates.get(t.id)! >= config.repairMargin).map((t) => t.id);
  const harm: PoolHarm = {
    h0Solved: solved.length,
    siblings: Object.fromEntries(
      siblings.map((s, i) => [s.id, harmOf(h0, chosen[i]!.measured, solved, config.repairMargin)]),
    ),
  };
  return {
    pool,
    candidates: candidates.map(({ measured: _m, ...c }) => c),
    h0Failures,
    repairSets,
    locality: mean(pairs),
    complementarity: bestSingle === 0 ? 0 : union / bestSingle,
    initialProfiles: profilesFrom(
      deps.base,
      h0,
      siblings.map((s, i) => [s, chosen[i]!.measured] as const),
      deps.devTasks,
    ),
    rolloutsSpent: spent,
    harm,
  };
}
