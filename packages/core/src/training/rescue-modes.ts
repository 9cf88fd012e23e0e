import { hasSignal } from "../grpo/advantage.ts";
import type { HarnessPool } from "../harness/pool.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import { addEvidence } from "../profile/profile.ts";
import type { RolloutRunner } from "../ports.ts";
import { failureSummary, rescueGroup } from "../rescue/rescue.ts";
import type { Rollout } from "../rollout/types.ts";
import { viewOf, type Task } from "../task.ts";
import { sample, type Rng } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import { route } from "../voting/router.ts";
import { auditDecision } from "./audit.ts";
import type { TrainConfig } from "./config.ts";
import type { GroupOutcome, TrainerState } from "./train-state.ts";

/** An all-fail group resolved: its outcome, the rollouts that replace it (if any), the siblings tried. */
export interface GroupResolution {
  outcome: Exclude<GroupOutcome, "used">;
  rollouts?: Rollout[];
  chosen?: string[];
}

/** Everything a rescue mode may read, and the trainer state it may change (counts, profiles, …). */
export interface RescueContext {
  armName: string;
  task: Task;
  group: readonly Rollout[];
  step: number;
  seed: (label: string, i: number) => number;
  config: TrainConfig;
  pool: HarnessPool;
  voters: readonly Voter[];
  runRollout: RolloutRunner;
  armRng: Rng;
  state: TrainerState;
}

export type RescueModeFn = (ctx: RescueContext) => Promise<GroupResolution>;
type Choose = (ctx: RescueContext, failure: { tags: string[]; events: string[] }) => Promise<HarnessSpec[]>;

/** Rescue under the chosen siblings: profiles learn from every rescue rollout, replaced or not. */
function siblingRescue(choose: Choose): RescueModeFn {
  return async (ctx) => {
    const { state, task } = ctx;
    state.rescue.triggered++;
    const failure = failureSummary(ctx.group);
    const chosen = await choose(ctx, failure);
    for (const c of chosen) state.chosenCounts[c.id] = (state.chosenCounts[c.id] ?? 0) + 1;
    const rescueRollouts = ctx.config.rescueRollouts ?? ctx.config.groupSize;
    const outcome = await rescueGroup(task, chosen, rescueRollouts, (i) => ctx.seed("rescue", i), ctx.runRollout);
    state.counts.rescue += outcome.group.length;
    for (const r of outcome.group) state.profiles[r.harnessId] = addEvidence(state.profiles[r.harnessId]!, r, { rescueOf: failure.tags, taskTags: task.tags });
    const ids = chosen.map((c) => c.id);
    if (outcome.kind === "replaced") {
      state.rescue.replaced++;
      return { outcome: "replaced", rollouts: outcome.group, chosen: ids };
    }
    state.rescue.dropped++;
    return { outcome: "dropped", chosen: ids };
  };
}

const chooseRandom: Choose = async (ctx) => sample(ctx.pool.siblings, ctx.config.k, ctx.armRng.fork(`random:${ctx.step}:${ctx.task.id}`));

const chooseByRouter: Choose = async (ctx, failure) => {
  const { config, pool, state, task } = ctx;
  const decision = await route(
    {
      decisionId: `${ctx.armName}:${ctx.step}:${task.id}`,
      task: viewOf(task),
      failureTags: failure.tags,
      failedEvents: failure.events,
      candidates: pool.siblings,
      profiles: state.profiles,
      poolVersion: pool.version,
    },
    { k: config.k, aggregator: config.aggregator, exploration: config.exploration, diverse: config.diverse },
    { voters: ctx.voters, rng: ctx.armRng.fork(`route:${ctx.step}:${task.id}`) },
  );
  state.decisions.push(decision);
  if (config.auditEvery && (state.decisionsOmitted + state.decisions.length) % config.auditEvery === 0) {
    const audit = await auditDecision(task, decision, pool, config.auditTrials, ctx.seed("audit", 0), ctx.runRollout);
    state.audits.push(audit);
    state.diagnosticRollouts += audit.rollouts;
  }
  return decision.chosen.map((id) => pool.siblings.find((s) => s.id === id)!);
};

/** Resample under H0 with the budget left (exactly one group at a time); no signal drops it. */
const resampleUnderH0: RescueModeFn = async (ctx) => {
  const { config, state } = ctx;
  if (state.extraLeft < config.groupSize) return { outcome: "dropped" };
  state.extraLeft -= config.groupSize;
  state.counts.resample += config.groupSize;
  const again = await Promise.all(Array.from({ length: config.groupSize }, (_, i) => ctx.runRollout(ctx.task, ctx.pool.base, ctx.seed("resample", i))));
  return hasSignal(again.map((r) => r.reward)) ? { outcome: "resampled", rollouts: again } : { outcome: "dropped" };
};

/**
 * What an arm does with an all-fail group, by name (as verl registers its advantage estimators):
 * drop it, resample it under H0, or rescue it under random or routed siblings. `ArmConfig.rescue`
 * is derived from these keys.
 */
export const RESCUE_MODES = {
  none: async () => ({ outcome: "dropped" }),
  router: siblingRescue(chooseByRouter),
  random: siblingRescue(chooseRandom),
  "resample-h0": resampleUnderH0,
} satisfies Record<string, RescueModeFn>;
export type RescueModeName = keyof typeof RESCUE_MODES;
