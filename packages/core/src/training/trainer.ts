import type { HarnessPool } from "../harness/pool.ts";
import type { ProfileSet } from "../profile/profile.ts";
import { reanchor } from "../profile/reanchor.ts";
import type { Policy, RolloutRunner } from "../ports.ts";
import { isAllFail } from "./rescue.ts";
import type { Rollout } from "../rollout/types.ts";
import { ConflictError } from "../errors.ts";
import type { Task } from "../task.ts";
import { hash32, sample, type Rng } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import type { PanelSettings } from "../voting/panel.ts";
import type { ArmConfig } from "./arm-config.ts";
import type { TrainConfig } from "./config.ts";
import { evaluateTasks } from "./evaluate.ts";
import { RESCUE_MODES, type GroupResolution, type RescueContext } from "./rescue-modes.ts";
import { speculativeRunner, type SpeculativeRunner } from "./speculation.ts";
import { buildSamples, updateSettings } from "./samples.ts";
import {
  applyStateChange,
  nullForNaN,
  withTotal,
  type StepRecord,
  type TrainResult,
  type TrainerState,
} from "./train-state.ts";

export interface TrainDeps {
  policy: Policy;
  runRollout: RolloutRunner;
  pool: HarnessPool;
  trainTasks: readonly Task[];
  probeTasks: readonly Task[];
  initialProfiles: ProfileSet;
  /** Dev tasks H0 failed when the initial profiles were measured (the first probe's priority). */
  probePriority?: readonly string[];
  voters: readonly Voter[];
  /** A voter panel's weights, quorum, fallback and deadlines, for the router arms. */
  panel?: PanelSettings;
  /** The seed's stream: batch order and evaluation seeds derive from it, not from the arm. */
  rng: Rng;
  onStep?: (step: number, record: StepRecord) => void;
  /**
   * Start the rescues of a step's all-fail groups at once, each as it would run from the step's
   * starting state, before resolving them in order (see {@link speculativeRunner}): for a
   * batching policy endpoint. Results are the same; a wrong guess costs rollouts nobody counts.
   * Routes each rescue twice, so only for voters that cost nothing (not LLM or queued voters).
   */
  speculate?: boolean;
}

export type { TrainResult } from "./train-state.ts";

/**
 * One arm's training as a step machine whose live state is a {@link TrainerState}: G rollouts
 * per task under H0; all-fail groups resolved by the arm's rescue mode (see `RESCUE_MODES`);
 * group-relative advantages; one PPO update per step; re-anchoring every `reanchorEvery` steps.
 * Batches, rollout seeds and router draws derive from the step, so a trainer resumed from
 * `state()` continues exactly as the uninterrupted one.
 *
 * @example
 * const trainer = await Trainer.start(arm, TrainConfig.parse({}), deps);
 * while (!trainer.done) await save((await trainer.step(), trainer.state()));
 * const result = trainer.result();
 */
export class Trainer {
  private readonly armRng: Rng;
  private readonly voters: readonly Voter[];

  private constructor(
    private readonly arm: ArmConfig,
    private readonly config: TrainConfig,
    private readonly deps: TrainDeps,
    private readonly s: TrainerState,
  ) {
    this.armRng = deps.rng.fork(`arm:${arm.name}`);
    this.voters = arm.voters.length ? deps.voters.filter((v) => arm.voters.includes(v.id)) : deps.voters;
  }

  /** A fresh trainer at step 0 (the step-0 curve point is measured here). */
  static async start(arm: ArmConfig, config: TrainConfig, deps: TrainDeps): Promise<Trainer> {
    const state: TrainerState = {
      arm: arm.name,
      step: 0,
      policyVersion: deps.policy.version(),
      counts: { train: 0, rescue: 0, resample: 0, reanchor: 0, total: 0 },
      extraLeft: arm.extraBudget ?? 0,
      probePriority: [...(deps.probePriority ?? [])],
      diagnosticRollouts: 0,
      curve: [],
      utilities: [],
      rescue: { triggered: 0, replaced: 0, dropped: 0, allFailGroups: 0, groups: 0 },
      audits: [],
      decisions: [],
      decisionsOmitted: 0,
      profiles: structuredClone(deps.initialProfiles),
      chosenCounts: {},
      adaptiveResamples: { attempts: 0, successes: 0 },
    };
    const trainer = new Trainer(arm, config, deps, state);
    await trainer.curvePoint(0);
    return trainer;
  }

  /** Continues from a saved state; the policy must be the arm's, at the state's version. */
  static resume(state: TrainerState, arm: ArmConfig, config: TrainConfig, deps: TrainDeps): Trainer {
    if (state.arm !== arm.name || state.policyVersion !== deps.policy.version()) {
      throw new ConflictError(
        `cannot continue ${state.arm} at policy version ${state.policyVersion} with ${arm.name} at version ${deps.policy.version()}`,
      );
    }
    return new Trainer(arm, config, deps, structuredClone(state));
  }

  get done(): boolean {
    return this.s.step >= this.config.steps;
  }

  /** Runs the next step: collect the groups, resolve each, build samples, update, maybe re-anchor. */
  async step(): Promise<StepRecord> {
    const step = this.s.step + 1;
    const batch = sample(this.deps.trainTasks, this.config.batchSize, this.deps.rng.fork(`batch:${step}`));
    const groups = await this.collectGroups(batch, step);
    const ahead = this.deps.speculate ? await this.speculate(batch, groups, step) : undefined;
    const used: Rollout[][] = [];
    const records: StepRecord["groups"] = [];
    for (const [g, task] of batch.entries()) {
      const group = groups[g]!;
      const meanReward = group.reduce((s, r) => s + r.reward, 0) / group.length;
      const resolved = await this.resolveGroup(task, group, step, ahead?.run ?? this.deps.runRollout);
      if (resolved.rollouts) used.push(resolved.rollouts);
      records.push({
        taskId: task.id,
        meanReward,
        allFail: resolved.outcome !== "used",
        outcome: resolved.outcome,
        ...(resolved.chosen ? { chosen: resolved.chosen } : {}),
        ...(resolved.adaptive ? { adaptive: resolved.adaptive } : {}),
      });
    }
    await ahead?.settle();
    await this.update(used);
    await this.maybeReanchor(step);
    await this.curvePoint(step);
    this.s.step = step;
    this.s.policyVersion = this.deps.policy.version();
    const record = { step, policyVersion: this.s.policyVersion, rollouts: withTotal(this.s.counts), groups: records };
    this.deps.onStep?.(step, record);
    return record;
  }

  /**
   * A copy of the state to continue from. Audits and decisions are never changed once made, so
   * their lists are copied but the records shared: a step's copy costs nothing per past decision.
   */
  state(): TrainerState {
    const { audits, decisions, ...rest } = this.s;
    return { ...structuredClone(rest), counts: withTotal(rest.counts), audits: [...audits], decisions: [...decisions] };
  }

  /** The arm's result so far (the final one once {@link done}). */
  result(): TrainResult {
    const {
      counts,
      step: _step,
      policyVersion: _version,
      extraLeft: _extra,
      probePriority: _priority,
      ...rest
    } = this.state();
    return { ...rest, rollouts: counts };
  }

  private async collectGroups(batch: readonly Task[], step: number): Promise<Rollout[][]> {
    const { groupSize } = this.config;
    const groups = await Promise.all(
      batch.map((task) =>
        Promise.all(
          Array.from({ length: groupSize }, (_, i) =>
            this.deps.runRollout(task, this.deps.pool.base, this.seedOf(step, task, "h0", i)),
          ),
        ),
      ),
    );
    this.s.counts.train += groupSize * batch.length;
    return groups;
  }

  private async resolveGroup(
    task: Task,
    group: Rollout[],
    step: number,
    runRollout: RolloutRunner,
  ): Promise<GroupResolution | { outcome: "used"; rollouts: Rollout[]; chosen?: undefined; adaptive?: undefined }> {
    this.s.rescue.groups++;
    if (!isAllFail(group)) return { outcome: "used", rollouts: group };
    this.s.rescue.allFailGroups++;
    const resolved = await RESCUE_MODES[this.arm.rescue].resolve(
      this.rescueContext(task, group, step, this.s, runRollout),
    );
    applyStateChange(this.s, resolved);
    return resolved;
  }

  private rescueContext(
    task: Task,
    group: readonly Rollout[],
    step: number,
    state: TrainerState,
    runRollout: RolloutRunner,
  ): RescueContext {
    const { config, voters, armRng } = this;
    const { pool, panel } = this.deps;
    return {
      armName: this.arm.name,
      task,
      group,
      step,
      seed: (label, i) => this.seedOf(step, task, label, i),
      config,
      pool,
      voters,
      ...(panel ? { panel } : {}),
      runRollout,
      armRng,
      state,
    };
  }

  /**
   * Dry-runs every all-fail group's rescue at once on a copy of the state as that group will find
   * it, as far as it is known before the rescues ahead of it end (each of those routes once, and
   * resamples one group while the budget lasts), and keeps the rollouts they started.
   */
  private async speculate(
    batch: readonly Task[],
    groups: readonly Rollout[][],
    step: number,
  ): Promise<SpeculativeRunner> {
    const ahead = speculativeRunner(this.deps.runRollout);
    let before = 0;
    const dryRuns = batch.map((task, g) => {
      if (!isAllFail(groups[g]!)) return undefined;
      const guess = this.state();
      guess.decisionsOmitted += before;
      guess.extraLeft = Math.max(0, guess.extraLeft - before * this.config.groupSize);
      before++;
      return RESCUE_MODES[this.arm.rescue].resolve(this.rescueContext(task, groups[g]!, step, guess, ahead.prefetch));
    });
    await Promise.allSettled(dryRuns);
    return ahead;
  }

  private async update(used: readonly Rollout[][]): Promise<void> {
    const samples = buildSamples(used, this.config);
    const settings = updateSettings({ ...this.config, ...this.arm.update });
    if (samples.length > 0)
      await this.deps.policy.update({ baseVersion: this.deps.policy.version(), samples, settings });
  }

  private async maybeReanchor(step: number): Promise<void> {
    const { config } = this;
    if (
      !RESCUE_MODES[this.arm.rescue].usesProfiles ||
      !this.arm.reanchor ||
      step % config.reanchorEvery !== 0 ||
      config.reanchorBudget <= 0
    )
      return;
    // A budget-matched arm re-anchors out of its extra budget, as the budget source's re-anchoring counted in it.
    const matched = this.arm.extraBudget !== undefined;
    const budget = matched ? Math.min(config.reanchorBudget, this.s.extraLeft) : config.reanchorBudget;
    if (budget <= 0) return;
    const re = await reanchor({
      probeTasks: this.deps.probeTasks,
      pool: this.deps.pool,
      profiles: this.s.profiles,
      budget,
      keep: config.reanchorKeep,
      policyVersion: this.deps.policy.version(),
      step,
      rng: this.armRng.fork(`reanchor:${step}`),
      runRollout: this.deps.runRollout,
      priority: this.s.probePriority,
    });
    this.s.profiles = re.profiles;
    this.s.probePriority = re.failing;
    this.s.counts.reanchor += re.spent;
    if (matched) this.s.extraLeft = Math.max(0, this.s.extraLeft - re.spent);
    this.s.utilities.push({ step, values: nullForNaN(re.utilities) });
  }

  private async curvePoint(step: number): Promise<void> {
    const { config, deps } = this;
    if (!config.curveEvery || step % config.curveEvery !== 0) return;
    const stride = Math.max(1, Math.floor(deps.trainTasks.length / config.curveTasks));
    const tasks = deps.trainTasks.filter((_, i) => i % stride === 0).slice(0, config.curveTasks);
    const ev = await evaluateTasks(tasks, () => deps.pool.base, 3, hash32("curve", deps.rng.seed), deps.runRollout);
    this.s.diagnosticRollouts += ev.rollouts;
    this.s.curve.push({ step, h0TrainAvgAt3: ev.avgAt3 });
  }

  private seedOf(step: number, task: Task, label: string, i: number): number {
    return hash32(`${label}:${step}:${task.id}:${i}`, this.deps.rng.seed);
  }
}

/**
 * Trains one arm to the end in one go (tests, tools); pausable drivers use {@link Trainer}.
 *
 * @example
 * const result = await trainArm({ name: "harness-s", rescue: "router", reanchor: true, voters: [] }, TrainConfig.parse({}), deps);
 */
export async function trainArm(arm: ArmConfig, config: TrainConfig, deps: TrainDeps): Promise<TrainResult> {
  const trainer = await Trainer.start(arm, config, deps);
  while (!trainer.done) await trainer.step();
  return trainer.result();
}
