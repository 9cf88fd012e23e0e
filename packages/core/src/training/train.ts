import { defaultAdvantageOptions, groupAdvantages, hasSignal } from "../grpo/advantage.ts";
import type { HarnessPool } from "../harness/pool.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import { addEvidence, type ProfileSet } from "../profile/profile.ts";
import { reanchor } from "../profile/reanchor.ts";
import type { Policy, RolloutRunner, UpdateSample } from "../ports.ts";
import { failureSummary, isAllFail, rescueGroup } from "../rescue/rescue.ts";
import type { Rollout } from "../rollout/types.ts";
import { viewOf, type Task } from "../task.ts";
import { hash32, sample, type Rng } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import { route, type RoutingDecision } from "../voting/router.ts";
import type { ArmConfig, TrainConfig } from "./config.ts";
import { TrainingPausedError } from "../errors.ts";
import { ConflictError } from "../service/errors.ts";
import { auditDecision, type AuditRecord } from "./audit.ts";
import { captureTrainerState, restoreTrainerState, withTotal, type TrainerState } from "./train-state.ts";
import { evaluateTasks } from "./evaluate.ts";

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
  /** The seed's stream: batch order and evaluation seeds derive from it, not from the arm. */
  rng: Rng;
  onStep?: (step: number, record: StepRecord) => void;
  /** Continue after the state's step instead of starting afresh; the policy must be at its version. */
  resumeFrom?: TrainerState;
  /** Called after every step with the state to continue from (save it to survive a crash). */
  onStepEnd?: (state: TrainerState) => void | Promise<void>;
  /**
   * Asked after each step (once this call has finished one) while steps remain; true ends the
   * call with {@link TrainingPausedError} after `onStepEnd`, so a continuation resumes there.
   */
  shouldYield?: () => boolean;
}

/** What one training step did, group by group (for experiment records and audits). */
export interface StepRecord {
  step: number;
  policyVersion: number;
  rollouts: RolloutCounts;
  groups: { taskId: string; meanReward: number; allFail: boolean; outcome: "used" | "replaced" | "resampled" | "dropped"; chosen?: string[] }[];
}

export interface RolloutCounts {
  train: number;
  rescue: number;
  resample: number;
  reanchor: number;
  total: number;
}

export interface TrainResult {
  arm: string;
  rollouts: RolloutCounts;
  /** Diagnostic rollouts (router audits, curves); never counted as training budget. */
  diagnosticRollouts: number;
  curve: { step: number; h0TrainAvgAt3: number }[];
  utilities: { step: number; values: Record<string, number> }[];
  rescue: { triggered: number; replaced: number; dropped: number; allFailGroups: number; groups: number };
  audits: AuditRecord[];
  decisions: RoutingDecision[];
  /** Decisions made before a continuation from a state that left them out (`withoutDecisions`). */
  decisionsOmitted: number;
  profiles: ProfileSet;
  chosenCounts: Record<string, number>;
}

/**
 * Trains one arm: G rollouts per task under H0; all-fail groups are rescued (router / random
 * siblings), resampled under H0 within a budget, or dropped; group-relative advantages; one
 * PPO update per step; re-anchoring of the profiles every `reanchorEvery` steps.
 *
 * @example
 * const result = await trainArm({ name: "harness-s", rescue: "router", reanchor: true, voters: [] }, TrainConfig.parse({}), deps);
 */
export async function trainArm(arm: ArmConfig, config: TrainConfig, deps: TrainDeps): Promise<TrainResult> {
  const { pool, policy } = deps;
  const resumed = deps.resumeFrom ? restoreTrainerState(deps.resumeFrom) : undefined;
  if (deps.resumeFrom && (deps.resumeFrom.arm !== arm.name || deps.resumeFrom.policyVersion !== policy.version())) {
    throw new ConflictError(`cannot continue ${deps.resumeFrom.arm} at policy version ${deps.resumeFrom.policyVersion} with ${arm.name} at version ${policy.version()}`);
  }
  const counts: RolloutCounts = resumed?.counts ?? { train: 0, rescue: 0, resample: 0, reanchor: 0, total: 0 };
  const result: TrainResult = resumed?.result ?? {
    arm: arm.name,
    rollouts: counts,
    diagnosticRollouts: 0,
    curve: [],
    utilities: [],
    rescue: { triggered: 0, replaced: 0, dropped: 0, allFailGroups: 0, groups: 0 },
    audits: [],
    decisions: [],
    decisionsOmitted: 0,
    profiles: structuredClone(deps.initialProfiles),
    chosenCounts: {},
  };
  const voters = arm.voters.length ? deps.voters.filter((v) => arm.voters.includes(v.id)) : deps.voters;
  const rescueRollouts = config.rescueRollouts ?? config.groupSize;
  let extraLeft = resumed?.extraLeft ?? arm.extraBudget ?? 0;
  let probePriority = resumed?.probePriority ?? deps.probePriority ?? [];
  const armRng = deps.rng.fork(`arm:${arm.name}`);

  const curvePoint = async (step: number) => {
    if (!config.curveEvery || step % config.curveEvery !== 0) return;
    const stride = Math.max(1, Math.floor(deps.trainTasks.length / config.curveTasks));
    const tasks = deps.trainTasks.filter((_, i) => i % stride === 0).slice(0, config.curveTasks);
    const ev = await evaluateTasks(tasks, () => pool.base, 3, hash32("curve", deps.rng.seed), deps.runRollout);
    result.diagnosticRollouts += ev.rollouts;
    result.curve.push({ step, h0TrainAvgAt3: ev.avgAt3 });
  };

  const first = (deps.resumeFrom?.step ?? 0) + 1;
  if (first === 1) await curvePoint(0);
  for (let step = first; step <= config.steps; step++) {
    const batch = sample(deps.trainTasks, config.batchSize, deps.rng.fork(`batch:${step}`));
    const seedOf = (task: Task, label: string, i: number) => hash32(`${label}:${step}:${task.id}:${i}`, deps.rng.seed);
    const groups = await Promise.all(
      batch.map((task) =>
        Promise.all(Array.from({ length: config.groupSize }, (_, i) => deps.runRollout(task, pool.base, seedOf(task, "h0", i)))),
      ),
    );
    counts.train += config.groupSize * batch.length;
    const used: Rollout[][] = [];
    const groupRecords: StepRecord["groups"] = [];
    for (let g = 0; g < batch.length; g++) {
      const task = batch[g]!;
      const group = groups[g]!;
      result.rescue.groups++;
      const meanReward = group.reduce((s, r) => s + r.reward, 0) / group.length;
      if (!isAllFail(group)) {
        used.push(group);
        groupRecords.push({ taskId: task.id, meanReward, allFail: false, outcome: "used" });
        continue;
      }
      result.rescue.allFailGroups++;
      const { rollouts: replacement, chosen } = await handleAllFail(task, group, step, (label, i) => seedOf(task, label, i));
      if (replacement) used.push(replacement);
      const outcome = !replacement ? "dropped" : arm.rescue === "resample-h0" ? "resampled" : "replaced";
      groupRecords.push({ taskId: task.id, meanReward, allFail: true, outcome, ...(chosen ? { chosen } : {}) });
    }

    const samples: UpdateSample[] = [];
    for (const group of used) {
      const adv = groupAdvantages(
        group.map((r) => r.reward),
        { ...defaultAdvantageOptions, normalizeStd: config.normalizeStd },
      );
      group.forEach((rollout, i) => {
        if (adv[i] !== 0) samples.push({ rollout, advantage: adv[i]! });
      });
    }
    if (samples.length > 0) {
      await policy.update({
        baseVersion: policy.version(),
        samples,
        settings: {
          learningRate: config.learningRate,
          clipEpsilon: config.clipEpsilon,
          klCoef: config.klCoef,
          epochs: config.epochs,
          rescueContext: config.rescueContext,
          maskIntercepted: config.maskIntercepted,
        },
      });
    }

    if (arm.rescue === "router" && arm.reanchor && step % config.reanchorEvery === 0 && config.reanchorBudget > 0) {
      const re = await reanchor({
        probeTasks: deps.probeTasks,
        pool,
        profiles: result.profiles,
        budget: config.reanchorBudget,
        keep: config.reanchorKeep,
        policyVersion: policy.version(),
        step,
        rng: armRng.fork(`reanchor:${step}`),
        runRollout: deps.runRollout,
        priority: probePriority,
      });
      result.profiles = re.profiles;
      probePriority = re.failing;
      counts.reanchor += re.spent;
      result.utilities.push({ step, values: re.utilities });
    }
    await curvePoint(step);
    deps.onStep?.(step, { step, policyVersion: policy.version(), rollouts: withTotal(counts), groups: groupRecords });
    await deps.onStepEnd?.(captureTrainerState(step, policy.version(), { result, counts, extraLeft, probePriority }));
    if (step < config.steps && deps.shouldYield?.()) throw new TrainingPausedError(arm.name, step);
  }
  counts.total = withTotal(counts).total;
  return result;

  async function handleAllFail(
    task: Task,
    group: Rollout[],
    step: number,
    seed: (label: string, i: number) => number,
  ): Promise<{ rollouts?: Rollout[]; chosen?: string[] }> {
    if (arm.rescue === "none") return {};
    if (arm.rescue === "resample-h0") {
      if (extraLeft < config.groupSize) return {};
      extraLeft -= config.groupSize;
      counts.resample += config.groupSize;
      const again = await Promise.all(
        Array.from({ length: config.groupSize }, (_, i) => deps.runRollout(task, pool.base, seed("resample", i))),
      );
      return hasSignal(again.map((r) => r.reward)) ? { rollouts: again } : {};
    }
    result.rescue.triggered++;
    const summary = failureSummary(group);
    let chosen: HarnessSpec[];
    if (arm.rescue === "random") {
      chosen = sample(pool.siblings, config.k, armRng.fork(`random:${step}:${task.id}`));
    } else {
      const decision = await route(
        {
          decisionId: `${arm.name}:${step}:${task.id}`,
          task: viewOf(task),
          failureTags: summary.tags,
          failedEvents: summary.events,
          candidates: pool.siblings,
          profiles: result.profiles,
          poolVersion: pool.version,
        },
        { k: config.k, aggregator: config.aggregator, exploration: config.exploration, diverse: config.diverse },
        { voters, rng: armRng.fork(`route:${step}:${task.id}`) },
      );
      result.decisions.push(decision);
      chosen = decision.chosen.map((id) => pool.siblings.find((s) => s.id === id)!);
      if (config.auditEvery && (result.decisionsOmitted + result.decisions.length) % config.auditEvery === 0) {
        const audit = await auditDecision(task, decision, pool, config.auditTrials, seed("audit", 0), deps.runRollout);
        result.audits.push(audit);
        result.diagnosticRollouts += audit.rollouts;
      }
    }
    for (const c of chosen) result.chosenCounts[c.id] = (result.chosenCounts[c.id] ?? 0) + 1;
    const outcome = await rescueGroup(task, chosen, rescueRollouts, (i) => seed("rescue", i), deps.runRollout);
    counts.rescue += outcome.group.length;
    for (const r of outcome.group) {
      result.profiles[r.harnessId] = addEvidence(result.profiles[r.harnessId]!, r, { rescueOf: summary.tags, taskTags: task.tags });
    }
    const ids = chosen.map((c) => c.id);
    if (outcome.kind === "replaced") {
      result.rescue.replaced++;
      return { rollouts: outcome.group, chosen: ids };
    }
    result.rescue.dropped++;
    return { chosen: ids };
  }
}
