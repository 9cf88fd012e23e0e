import { rank1Picker } from "../routing/rank1.ts";
import { mean } from "../metrics/stats.ts";
import { rescueUtility } from "../profile/profile.ts";
import type { Task } from "../task.ts";
import { evaluateTasks, type Evaluation } from "../training/evaluate.ts";
import { Trainer, type TrainResult } from "../training/trainer.ts";
import { nullForNaN, withoutDecisions } from "../training/train-state.ts";
import { hash32, type Rng } from "../util/rng.ts";
import { armConfig, armDefinition } from "./arms.ts";
import type { ExperimentConfig, ExperimentDeps, SeedInstance, StopReason } from "./experiment-config.ts";
import type { ArmSeedResult } from "./summary.ts";
import { unitPolicy } from "./unit-policies.ts";
import { evenlySpaced } from "../util/evenly-spaced.ts";

export const score = (e: Evaluation) => ({ passAt3: e.passAt3, avgAt3: e.avgAt3 });

/** The tasks of a split that are evaluated: all, or `evalTasks` of them evenly spaced. */
export function evalSet(config: ExperimentConfig, tasks: readonly Task[]): readonly Task[] {
  return config.evalTasks === undefined ? tasks : evenlySpaced(tasks, config.evalTasks);
}

export interface UnitContext {
  config: ExperimentConfig;
  deps: ExperimentDeps;
  inst: SeedInstance;
  seed: number;
  rng: Rng;
  runnerFor: NonNullable<ExperimentDeps["runnerFor"]>;
  /** A registered arm (see `registerArm`). */
  name: string;
  /** What the seed's budget-source arm spent beyond training (a budget-matched arm's extra budget). */
  extra: number;
}

/**
 * Trains one (arm, seed) unit, continuing from its checkpoint when its policy is still there,
 * and evaluates it; with policies that outlive an attempt, it may pause between two steps.
 */
export async function trainUnit(
  ctx: UnitContext,
): Promise<
  | { kind: "paused" }
  | { kind: "stopped"; reason: StopReason }
  | { kind: "trained"; result: ArmSeedResult; policyId?: string }
> {
  const { config, deps, inst, seed, name } = ctx;
  const unit = await unitPolicy(deps, name, seed);
  const runRollout = ctx.runnerFor(`${name}/${seed}`, unit.policy, seed);
  const arm = armConfig(name, ctx.extra, config.singleVoter);
  const trainerDeps = {
    policy: unit.policy,
    runRollout,
    pool: inst.evolution.pool,
    trainTasks: inst.train,
    probeTasks: inst.dev,
    initialProfiles: inst.evolution.initialProfiles,
    probePriority: inst.evolution.h0Failures,
    voters: deps.voters,
    ...(deps.panel ? { panel: deps.panel } : {}),
    rng: ctx.rng,
    speculate: deps.speculateRescues,
    onStep: (step: number, record: Parameters<NonNullable<ExperimentDeps["onProgress"]>>[0]["record"]) =>
      deps.onProgress?.({ seed, arm: name, step, steps: config.train.steps, record }),
  };
  const trainer = unit.resumeFrom
    ? Trainer.resume(unit.resumeFrom, arm, config.train, trainerDeps)
    : await Trainer.start(arm, config.train, trainerDeps);
  while (!trainer.done) {
    await trainer.step();
    if (unit.id !== undefined) {
      await deps.policies?.persist?.(unit.id);
      await deps.onUnitStep?.({ arm: name, seed, policyId: unit.id, state: withoutDecisions(trainer.state()) });
    }
    const stop = deps.shouldStop?.();
    if (stop) return { kind: "stopped", reason: stop };
    // Without outliving policies a unit is the smallest piece of work: it pauses only between units.
    if (unit.id !== undefined && !trainer.done && deps.shouldYield?.()) return { kind: "paused" };
  }
  const result = await evaluatedResult(ctx, trainer.result(), runRollout);
  return { kind: "trained", result, ...(unit.id !== undefined ? { policyId: unit.id } : {}) };
}

/** A trained unit's H0 scores on train and held-out, its Rank-1 score and router accuracy. */
async function evaluatedResult(
  ctx: UnitContext,
  trained: TrainResult,
  runRollout: Parameters<typeof evaluateTasks>[4],
): Promise<ArmSeedResult> {
  const { config, deps, inst, seed, name } = ctx;
  const { pool, initialProfiles } = inst.evolution;
  const { rank1 } = armDefinition(name);
  const evalBase = hash32("eval", seed);
  const train = await evaluateTasks(
    evalSet(config, inst.train),
    () => pool.base,
    config.evalSamples,
    evalBase,
    runRollout,
  );
  const held = await evaluateTasks(
    evalSet(config, inst.heldout),
    () => pool.base,
    config.evalSamples,
    evalBase,
    runRollout,
  );
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
      ...(rank1
        ? [
            {
              step: 0,
              values: Object.fromEntries(pool.siblings.map((sib) => [sib.id, rescueUtility(initialProfiles[sib.id]!)])),
            },
          ]
        : []),
      ...trained.utilities.map((u) => ({ step: u.step, values: nullForNaN(u.values) })),
    ],
    siblingDirections: Object.fromEntries(pool.siblings.map((sib) => [sib.id, sib.provenance.direction])),
    chosenCounts: trained.chosenCounts,
  };
  if (rank1) {
    const pick = rank1Picker(pool, trained.profiles, { voters: deps.voters, rng: ctx.rng.fork(`rank1:${name}`) });
    result.rank1 = {
      heldout: score(
        await evaluateTasks(evalSet(config, inst.heldout), pick, config.evalSamples, evalBase, runRollout),
      ),
    };
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
  return result;
}
