import { z } from "zod";
import type { EvolutionResult } from "../evolution/evolve.ts";
import { rank1Picker } from "../inference/rank1.ts";
import { mean } from "../metrics/stats.ts";
import type { Environment, Policy, RolloutRunner } from "../ports.ts";
import { rescueUtility } from "../profile/profile.ts";
import { runEpisode } from "../rollout/run-episode.ts";
import { Protocol, type Task } from "../task.ts";
import { ArmConfig, TrainConfig } from "../training/config.ts";
import { evaluateTasks, type Evaluation } from "../training/evaluate.ts";
import { trainArm, type StepRecord, type TrainResult } from "../training/train.ts";
import { nullForNaN, withoutDecisions, type TrainerState } from "../training/train-state.ts";
import { unitPolicy, type UnitCheckpoint, type UnitPolicies } from "./unit-policies.ts";
import { createRng, hash32 } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import { TimeSliceEndedError, TrainingPausedError } from "../errors.ts";
import { summarise } from "./summarise.ts";
import type { ArmSeedResult, ExperimentSummary, SeedBaseline } from "./summary.ts";

export const ARM_NAMES = ["grpo", "grpo-budget", "harness-s", "harness-s-random", "harness-s-noreanchor", "harness-s-single-voter"] as const;

export const ExperimentConfig = z.object({
  seeds: z.array(z.number().int()).min(1).default([1, 2, 3, 4, 5]),
  arms: z.array(z.enum(ARM_NAMES)).min(1).default([...ARM_NAMES]),
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

/** The tasks of a split that are evaluated: all, or `evalTasks` of them evenly spaced. */
function evalSet(config: ExperimentConfig, tasks: readonly Task[]): readonly Task[] {
  if (config.evalTasks === undefined || config.evalTasks >= tasks.length) return tasks;
  const stride = tasks.length / config.evalTasks;
  return Array.from({ length: config.evalTasks }, (_, i) => tasks[Math.floor(i * stride)]!);
}

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
   * {@link policies}) after each training step; true ends the attempt with
   * {@link TimeSliceEndedError}. Every attempt makes progress: at least a unit, or with
   * policies at least a step.
   */
  shouldYield?: () => boolean;
}

function armConfig(name: (typeof ARM_NAMES)[number], extra: number, singleVoter: string): ArmConfig {
  switch (name) {
    case "grpo":
      return ArmConfig.parse({ name, rescue: "none", reanchor: false });
    case "grpo-budget":
      return ArmConfig.parse({ name, rescue: "resample-h0", extraBudget: extra, reanchor: false });
    case "harness-s":
      return ArmConfig.parse({ name, rescue: "router" });
    case "harness-s-random":
      return ArmConfig.parse({ name, rescue: "random", reanchor: false });
    case "harness-s-noreanchor":
      return ArmConfig.parse({ name, rescue: "router", reanchor: false });
    case "harness-s-single-voter":
      return ArmConfig.parse({ name, rescue: "router", voters: [singleVoter] });
  }
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

const score = (e: Evaluation) => ({ passAt3: e.passAt3, avgAt3: e.avgAt3 });

/**
 * Trains every arm over every seed from the same initial policy per seed, on that seed's
 * benchmark instance and frozen pool (see {@link ExperimentDeps.instance}), evaluates all of them
 * under H0 on train and held-out tasks with paired seeds, and summarises. `grpo-budget` gets,
 * per seed, exactly the extra rollouts that `harness-s` spent (rescue + re-anchoring).
 *
 * @example
 * const summary = await runExperiment(ExperimentConfig.parse({ seeds: [1, 2] }), deps);
 */
export async function runExperiment(config: ExperimentConfig, deps: ExperimentDeps): Promise<ExperimentSummary> {
  const order = [...config.arms].sort((a, b) => (a === "harness-s" ? -1 : b === "harness-s" ? 1 : 0));
  const perArm = new Map<string, ArmSeedResult[]>(order.map((a) => [a, []]));
  const baselines: SeedBaseline[] = [];
  const instances = new Map<number, SeedInstance>();
  let trainedNow = 0; // units trained by this attempt: each attempt finishes at least one

  for (const seed of config.seeds) {
    const inst = await deps.instance(seed);
    instances.set(seed, inst);
    const { pool, initialProfiles } = inst.evolution;
    const rng = createRng(seed);
    const evalBase = hash32("eval", seed);
    const runnerFor = deps.runnerFor ?? inProcessRunners(deps.env);
    let baseline = deps.resume?.baselines.find((b) => b.seed === seed);
    if (!baseline) {
      const initial = deps.policies ? await deps.policies.create(`initial/${seed}`, seed) : { policy: deps.createPolicy(seed) };
      const runner0 = runnerFor(`initial/${seed}`, initial.policy, seed);
      const h0Train = await evaluateTasks(evalSet(config, inst.train), () => pool.base, config.evalSamples, evalBase, runner0);
      const h0Held = await evaluateTasks(evalSet(config, inst.heldout), () => pool.base, config.evalSamples, evalBase, runner0);
      const pick0 = rank1Picker(pool, initialProfiles, { voters: deps.voters, rng: rng.fork("rank1") });
      const r1 = await evaluateTasks(evalSet(config, inst.heldout), pick0, config.evalSamples, evalBase, runner0);
      baseline = { seed, h0: { train: score(h0Train), heldout: score(h0Held) }, rank1: { heldout: score(r1) }, behaviours: h0Train.behaviours };
      await deps.onSeedBaseline?.(baseline);
      if ("id" in initial) await deps.policies?.release?.(initial.id);
    }
    baselines.push(baseline);

    let extra = 0;
    for (const name of order) {
      const done = deps.resume?.results.find((r) => r.arm === name && r.result.seed === seed)?.result;
      if (done) {
        if (name === "harness-s") extra = done.rolloutBreakdown.rescue + done.rolloutBreakdown.reanchor;
        perArm.get(name)!.push(done);
        continue;
      }
      if (trainedNow > 0 && deps.shouldYield?.()) throw new TimeSliceEndedError(unitsLeft(config, perArm, deps.resume?.results));
      const unit = await unitPolicy(deps, name, seed);
      const policy = unit.policy;
      const runRollout = runnerFor(`${name}/${seed}`, policy, seed);
      const stepwise = unit.id !== undefined;
      const trained: TrainResult = await trainArm(armConfig(name, extra, config.singleVoter), config.train, {
        policy,
        runRollout,
        pool,
        trainTasks: inst.train,
        probeTasks: inst.dev,
        initialProfiles,
        probePriority: inst.evolution.h0Failures,
        voters: deps.voters,
        rng,
        onStep: (step, record) => deps.onProgress?.({ seed, arm: name, step, steps: config.train.steps, record }),
        ...(stepwise
          ? {
              resumeFrom: unit.resumeFrom,
              onStepEnd: (state: TrainerState) => deps.onUnitStep?.({ arm: name, seed, policyId: unit.id!, state: withoutDecisions(state) }),
              shouldYield: () => deps.shouldYield?.() ?? false,
            }
          : {}),
      }).catch((err: unknown) => {
        if (err instanceof TrainingPausedError) throw new TimeSliceEndedError(unitsLeft(config, perArm, deps.resume?.results));
        throw err;
      });
      if (name === "harness-s") extra = trained.rollouts.rescue + trained.rollouts.reanchor;
      const train = await evaluateTasks(evalSet(config, inst.train), () => pool.base, config.evalSamples, evalBase, runRollout);
      const held = await evaluateTasks(evalSet(config, inst.heldout), () => pool.base, config.evalSamples, evalBase, runRollout);
      const result: ArmSeedResult = {
        seed,
        rollouts: trained.rollouts.total,
        rolloutBreakdown: {
          train: trained.rollouts.train,
          rescue: trained.rollouts.rescue,
          resample: trained.rollouts.resample,
          reanchor: trained.rollouts.reanchor,
        },
        h0: { train: score(train), heldout: score(held) },
        byFamily: { train: train.byFamily, heldout: held.byFamily },
        byCombination: { heldout: held.byCombination },
        behaviours: held.behaviours,
        rescue: trained.rescue,
        curve: trained.curve,
        utilities: [
          ...(name.startsWith("harness-s")
            ? [{ step: 0, values: Object.fromEntries(pool.siblings.map((sib) => [sib.id, rescueUtility(initialProfiles[sib.id]!)])) }]
            : []),
          ...trained.utilities.map((u) => ({ step: u.step, values: nullForNaN(u.values) })),
        ],
        siblingDirections: Object.fromEntries(pool.siblings.map((sib) => [sib.id, sib.provenance.direction])),
        chosenCounts: trained.chosenCounts,
      };
      if (name.startsWith("harness-s")) {
        const pick = rank1Picker(pool, trained.profiles, { voters: deps.voters, rng: rng.fork(`rank1:${name}`) });
        result.rank1 = { heldout: score(await evaluateTasks(evalSet(config, inst.heldout), pick, config.evalSamples, evalBase, runRollout)) };
      }
      if (trained.audits.length) {
        const rescuable = trained.audits.filter((a) => a.rescuable);
        result.routerAccuracy = {
          audited: trained.audits.length,
          rescuable: rescuable.length,
          hitRate: mean(rescuable.map((a) => (a.hit ? 1 : 0))),
          randomHitRate: mean(rescuable.map((a) => a.randomHitChance)),
        };
      }
      trainedNow++;
      perArm.get(name)!.push(result);
      await deps.onArmSeed?.(name, result);
      if (unit.id !== undefined) await deps.policies?.release?.(unit.id);
    }
  }

  return summarise(config, { perArm, baselines, instances });
}
