import { z } from "zod";
import type { EvolutionResult } from "../evolution/evolve.ts";
import { rank1Picker } from "../inference/rank1.ts";
import type { Environment, Policy, RolloutRunner } from "../ports.ts";
import { runEpisode } from "../rollout/run-episode.ts";
import { Protocol, type Task } from "../task.ts";
import { TrainConfig } from "../training/config.ts";
import { evaluateTasks } from "../training/evaluate.ts";
import type { StepRecord } from "../training/train-state.ts";
import type { UnitCheckpoint, UnitPolicies } from "./unit-policies.ts";
import { createRng, hash32, type Rng } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import { summarise } from "./summarise.ts";
import type { ArmSeedResult, ExperimentSummary, SeedBaseline } from "./summary.ts";
import { evalSet, score, trainUnit } from "./unit.ts";

export const ARM_NAMES = ["grpo", "grpo-budget", "harness-s", "harness-s-random", "harness-s-noreanchor", "harness-s-single-voter"] as const;

export const ExperimentConfig = z.object({
  seeds: z.array(z.number().int()).min(1).default([1, 2, 3, 4, 5]),
  arms: z
    .array(z.enum(ARM_NAMES))
    .min(1)
    .default([...ARM_NAMES]),
  train: TrainConfig.default(TrainConfig.parse({})),
  evalSamples: z.number().int().min(3).default(6),
  singleVoter: z.string().default("failure-tag-evidence"),
  /**
   * What the instances' `heldout` slot holds: the test split, or (under "validation") a split of
   * train-side tasks held back for tuning. Recorded so reports label it and pooling refuses a mix.
   */
  protocol: Protocol.default("test"),
  /**
   * Evaluate at most this many tasks per split (evenly spaced); default every task. For slow
   * policies (an LLM through the policy worker on CPU); headline runs evaluate every task.
   */
  evalTasks: z.number().int().min(1).optional(),
});
export type ExperimentConfig = z.infer<typeof ExperimentConfig>;

/** One benchmark instance: its task splits and the sibling pool evolved (and frozen) on its dev split. */
export interface SeedInstance {
  train: readonly Task[];
  dev: readonly Task[];
  heldout: readonly Task[];
  evolution: EvolutionResult;
}

export interface ExperimentDeps {
  env: Environment;
  createPolicy: (seed: number) => Policy;
  voters: readonly Voter[];
  /** The instance a seed runs on: its own (independent replicates) or one shared by every seed. */
  instance: (seed: number) => Promise<SeedInstance>;
  onProgress?: (event: { seed: number; arm: string; step: number; steps: number; record: StepRecord }) => void;
  /**
   * How rollouts of one policy are run: in process by default; through the dispatch queue in
   * the local-aws and cloud runtimes. `policyId` is `initial/<seed>` or `<arm>/<seed>`.
   */
  runnerFor?: (policyId: string, policy: Policy, seed: number) => RolloutRunner;
  /** Called when one arm of one seed is trained and evaluated (partial results survive a stop). */
  onArmSeed?: (arm: string, result: ArmSeedResult) => void | Promise<void>;
  /** Called when a seed's initial policy has been evaluated (kept for a resumed attempt). */
  onSeedBaseline?: (baseline: SeedBaseline) => void | Promise<void>;
  /**
   * What an earlier attempt of the same run finished: those seeds' baselines and (arm, seed)
   * results are reused, not re-run. Runs are deterministic per seed, so the summary is the same.
   */
  resume?: { baselines: readonly SeedBaseline[]; results: readonly { arm: string; result: ArmSeedResult }[]; units?: readonly UnitCheckpoint[] };
  /**
   * Policies that outlive an attempt (at a policy endpoint), so a unit can continue mid-way: with
   * them, a time slice may also end between two training steps, and {@link onUnitStep} gets
   * a checkpoint after every step. Without them, units are the smallest piece of work.
   */
  policies?: UnitPolicies;
  /** Called after every training step of a unit when {@link policies} is given. */
  onUnitStep?: (checkpoint: UnitCheckpoint) => void | Promise<void>;
  /**
   * Asked before each (arm, seed) after the first this attempt trains, and (with
   * {@link policies}) after each training step; true ends the attempt, which then returns
   * `{ kind: "paused" }`. Every attempt makes progress: at least a unit, or with policies at
   * least a step.
   */
  shouldYield?: () => boolean;
}

/** The default {@link ExperimentDeps.runnerFor}: every rollout runs here, with the policy itself. */
export function inProcessRunners(env: Environment): NonNullable<ExperimentDeps["runnerFor"]> {
  return (_policyId, policy) => (t, h, s) => runEpisode(t, h, s, { env, policy });
}

/** (arm, seed) units neither finished in this attempt nor carried over from an earlier one. */
function unitsLeft(config: ExperimentConfig, perArm: ReadonlyMap<string, readonly ArmSeedResult[]>, resumed: NonNullable<ExperimentDeps["resume"]>["results"] = []): number {
  const done = new Set([...perArm.entries()].flatMap(([arm, runs]) => runs.map((r) => `${arm}/${r.seed}`)));
  for (const r of resumed) done.add(`${r.arm}/${r.result.seed}`);
  return config.seeds.flatMap((seed) => config.arms.map((arm) => `${arm}/${seed}`)).filter((u) => !done.has(u)).length;
}

/** How an attempt ended: with every unit trained, or paused at a boundary (to be continued). */
export type ExperimentOutcome = { kind: "done"; summary: ExperimentSummary } | { kind: "paused"; remaining: number };

/** The initial policy's scores on a seed (reused from an earlier attempt when it has them). */
async function seedBaseline(
  config: ExperimentConfig,
  deps: ExperimentDeps,
  inst: SeedInstance,
  seed: number,
  rng: Rng,
  runnerFor: NonNullable<ExperimentDeps["runnerFor"]>,
): Promise<SeedBaseline> {
  const saved = deps.resume?.baselines.find((b) => b.seed === seed);
  if (saved) return saved;
  const { pool, initialProfiles } = inst.evolution;
  const evalBase = hash32("eval", seed);
  const initial = deps.policies ? await deps.policies.create(`initial/${seed}`, seed) : { policy: deps.createPolicy(seed) };
  const runner0 = runnerFor(`initial/${seed}`, initial.policy, seed);
  const h0Train = await evaluateTasks(evalSet(config, inst.train), () => pool.base, config.evalSamples, evalBase, runner0);
  const h0Held = await evaluateTasks(evalSet(config, inst.heldout), () => pool.base, config.evalSamples, evalBase, runner0);
  const pick0 = rank1Picker(pool, initialProfiles, { voters: deps.voters, rng: rng.fork("rank1") });
  const r1 = await evaluateTasks(evalSet(config, inst.heldout), pick0, config.evalSamples, evalBase, runner0);
  const baseline = { seed, h0: { train: score(h0Train), heldout: score(h0Held) }, rank1: { heldout: score(r1) }, behaviours: h0Train.behaviours };
  await deps.onSeedBaseline?.(baseline);
  if ("id" in initial) await deps.policies?.release?.(initial.id);
  return baseline;
}

/**
 * Trains every arm over every seed from the same initial policy per seed, on that seed's
 * benchmark instance and frozen pool (see {@link ExperimentDeps.instance}), evaluates all of them
 * under H0 on train and held-out tasks with paired seeds, and summarises. `grpo-budget` gets,
 * per seed, exactly the extra rollouts that `harness-s` spent (rescue + re-anchoring). With
 * `shouldYield` an attempt may pause at a unit or step boundary: `{ kind: "paused" }`, and the
 * next attempt (with `resume`) continues there.
 *
 * @example
 * const outcome = await runExperiment(ExperimentConfig.parse({ seeds: [1, 2] }), deps);
 * if (outcome.kind === "done") report(outcome.summary);
 */
export async function runExperiment(config: ExperimentConfig, deps: ExperimentDeps): Promise<ExperimentOutcome> {
  const order = [...config.arms].sort((a, b) => (a === "harness-s" ? -1 : b === "harness-s" ? 1 : 0));
  const perArm = new Map<string, ArmSeedResult[]>(order.map((a) => [a, []]));
  const baselines: SeedBaseline[] = [];
  const instances = new Map<number, SeedInstance>();
  const paused = (): ExperimentOutcome => ({ kind: "paused", remaining: unitsLeft(config, perArm, deps.resume?.results) });
  let trainedNow = 0; // units trained by this attempt: each attempt finishes at least one

  for (const seed of config.seeds) {
    const inst = await deps.instance(seed);
    instances.set(seed, inst);
    const rng = createRng(seed);
    const runnerFor = deps.runnerFor ?? inProcessRunners(deps.env);
    baselines.push(await seedBaseline(config, deps, inst, seed, rng, runnerFor));
    let extra = 0;
    for (const name of order) {
      const done = deps.resume?.results.find((r) => r.arm === name && r.result.seed === seed)?.result;
      if (done) {
        if (name === "harness-s") extra = done.rolloutBreakdown.rescue + done.rolloutBreakdown.reanchor;
        perArm.get(name)!.push(done);
        continue;
      }
      if (trainedNow > 0 && deps.shouldYield?.()) return paused();
      const unit = await trainUnit({ config, deps, inst, seed, rng, runnerFor, name, extra });
      if (unit.kind === "paused") return paused();
      if (name === "harness-s") extra = unit.result.rolloutBreakdown.rescue + unit.result.rolloutBreakdown.reanchor;
      trainedNow++;
      perArm.get(name)!.push(unit.result);
      await deps.onArmSeed?.(name, unit.result);
      if (unit.policyId !== undefined) await deps.policies?.release?.(unit.policyId);
    }
  }
  return { kind: "done", summary: summarise(config, { perArm, baselines, instances }) };
}

/**
 * {@link runExperiment} for callers that never pause it (no `shouldYield`): the summary.
 *
 * @example
 * const summary = await runExperimentToEnd(ExperimentConfig.parse({ seeds: [1] }), deps);
 */
export async function runExperimentToEnd(config: ExperimentConfig, deps: Omit<ExperimentDeps, "shouldYield">): Promise<ExperimentSummary> {
  const outcome = await runExperiment(config, deps);
  if (outcome.kind !== "done") throw new Error("unreachable: a run without shouldYield never pauses");
  return outcome.summary;
}
