import { hasSignal } from "../grpo/advantage.ts";
import type { HarnessPool } from "../harness/pool.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import { failureSummary, rescueGroup } from "./rescue.ts";
import { H0_OPTION, cappedPosterior, chooseAdaptive, siblingEvidence, type AdaptiveChoice } from "./adaptive.ts";
import { profileOf } from "../profile/profile.ts";
import type { Rollout } from "../rollout/types.ts";
import { viewOf, type Task } from "../task.ts";
import { sample, type Rng } from "../util/rng.ts";
import type { Voter } from "../voting/ballot.ts";
import type { PanelSettings } from "../voting/panel.ts";
import { route, routerOptions } from "../voting/router.ts";
import { auditDecision } from "./audit.ts";
import type { TrainConfig } from "./config.ts";
import type { GroupOutcome, StateChange, TrainerState } from "./train-state.ts";

export type { StateChange } from "./train-state.ts";

/**
 * An all-fail group resolved: its outcome, the rollouts that replace it (if any), the siblings tried, and what it
 * changed.
 */
export interface GroupResolution {
  outcome: Exclude<GroupOutcome, "used">;
  rollouts?: Rollout[];
  chosen?: string[];
  change?: StateChange;
  /** The adaptive mode's choice and the estimates behind it. */
  adaptive?: AdaptiveChoice;
}

/** Everything a rescue mode may read (the trainer's state included, read-only). */
export interface RescueContext {
  armName: string;
  task: Task;
  group: readonly Rollout[];
  step: number;
  seed: (label: string, i: number) => number;
  config: TrainConfig;
  pool: HarnessPool;
  voters: readonly Voter[];
  /** A voter panel's weights, quorum, fallback and deadlines (none: equal weights, a majority). */
  panel?: PanelSettings;
  runRollout: RolloutRunner;
  armRng: Rng;
  state: Readonly<TrainerState>;
}

export type RescueModeFn = (ctx: RescueContext) => Promise<GroupResolution>;
/** The siblings to rescue under, and the routing decision (and audit) that picked them, if any. */
type Choose = (
  ctx: RescueContext,
  failure: { tags: string[]; events: string[] },
) => Promise<{ chosen: HarnessSpec[] } & Pick<StateChange, "decision" | "audit" | "diagnosticRollouts">>;

/**
 * A sibling rescue run: `chosen` once per rollout slot's harness block (see `rescueGroup`); profiles learn from every
 * rescue rollout, replaced or not.
 */
async function rescueUnder(
  ctx: RescueContext,
  failure: { tags: string[] },
  chosen: readonly HarnessSpec[],
  total: number,
  extra: Pick<StateChange, "decision" | "audit" | "diagnosticRollouts" | "extraSpent">,
): Promise<GroupResolution> {
  const outcome = await rescueGroup(ctx.task, chosen, total, (i) => ctx.seed("rescue", i), ctx.runRollout);
  const ids = [...new Set(chosen.map((c) => c.id))];
  const replaced = outcome.kind === "replaced";
  const change: StateChange = {
    ...extra,
    counts: { rescue: outcome.group.length },
    rescue: { triggered: 1, ...(replaced ? { replaced: 1 } : { dropped: 1 }) },
    evidence: { rollouts: outcome.group, rescueOf: failure.tags, taskTags: ctx.task.tags },
  };
  return replaced
    ? { outcome: "replaced", rollouts: outcome.group, chosen: ids, change }
    : { outcome: "dropped", chosen: ids, change };
}

/** Rescue under the chosen siblings, the rollouts split evenly. */
function siblingRescue(choose: Choose): RescueModeFn {
  return async (ctx) => {
    const failure = failureSummary(ctx.group);
    const { chosen, ...routing } = await choose(ctx, failure);
    return rescueUnder(ctx, failure, chosen, ctx.config.rescueRollouts ?? ctx.config.groupSize, routing);
  };
}

const chooseRandom: Choose = async (ctx) => ({
  chosen: sample(ctx.pool.siblings, ctx.config.k, ctx.armRng.fork(`random:${ctx.step}:${ctx.task.id}`)),
});

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
    routerOptions({
      k: config.k,
      aggregator: config.aggregator,
      exploration: config.exploration,
      diverse: config.diverse,
      ...ctx.panel?.options,
      ...(ctx.panel?.timeoutMs ? { voterTimeoutMs: ctx.panel.timeoutMs } : {}),
    }),
    {
      voters: ctx.voters,
      rng: ctx.armRng.fork(`route:${ctx.step}:${task.id}`),
      ...(ctx.panel?.clock ? { clock: ctx.panel.clock } : {}),
      ...(ctx.panel?.fallback ? { fallback: ctx.panel.fallback } : {}),
    },
  );
  const chosen = decision.chosen.map((id) => pool.siblings.find((s) => s.id === id)!);
  const decisionsMade = state.decisionsOmitted + state.decisions.length + 1;
  if (!config.auditEvery || decisionsMade % config.auditEvery !== 0) return { chosen, decision };
  const audit = await auditDecision(task, decision, pool, config.auditTrials, ctx.seed("audit", 0), ctx.runRollout);
  return { chosen, decision, audit, diagnosticRollouts: audit.rollouts };
};

/** Drop the group: it has no signal to train on. */
const dropGroup: RescueModeFn = async () => ({ outcome: "dropped" });

/** One group of `groupSize` fresh H0 rollouts, counted against the extra budget; trained on only with signal. */
async function resampleOnce(ctx: RescueContext, extra: StateChange = {}): Promise<GroupResolution> {
  const { groupSize } = ctx.config;
  const again = await Promise.all(
    Array.from({ length: groupSize }, (_, i) => ctx.runRollout(ctx.task, ctx.pool.base, ctx.seed("resample", i))),
  );
  const change: StateChange = { ...extra, extraSpent: groupSize, counts: { resample: groupSize } };
  return hasSignal(again.map((r) => r.reward))
    ? { outcome: "resampled", rollouts: again, change }
    : { outcome: "dropped", change };
}

/** Resample under H0 with the budget left (exactly one group at a time); no signal drops it. */
const resampleUnderH0: RescueModeFn = async (ctx) =>
  ctx.state.extraLeft < ctx.config.groupSize ? { outcome: "dropped" } : resampleOnce(ctx);

/**
 * Adaptive: route as harness-s does, then let {@link chooseAdaptive} spend the group's extra
 * rollouts under the router's Top-k (and how they split), under H0 again, or not at all, by
 * Thompson draws from each option's posterior (siblings: their profiles' rescue evidence; H0 what
 * this run's resamples found). Budget-matched: every rollout comes out of the extra budget. The
 * choice and its estimates go into the step's record.
 */
const adaptiveRescue: RescueModeFn = async (ctx) => {
  const { config, state, task } = ctx;
  const failure = failureSummary(ctx.group);
  const { chosen, ...routing } = await chooseByRouter(ctx, failure);
  const siblings = chosen.map((s) =>
    cappedPosterior(s.id, siblingEvidence(profileOf(state.profiles, s.id), task.family, failure.tags)),
  );
  const cost = { siblings: config.rescueRollouts ?? config.groupSize, resample: config.groupSize };
  const input = {
    siblings,
    resample: cappedPosterior(H0_OPTION, state.adaptiveResamples),
    cost,
    budgetLeft: state.extraLeft,
  };
  const adaptive = chooseAdaptive(input, ctx.armRng.fork(`adaptive:${ctx.step}:${task.id}`));
  if (adaptive.option === "none") return { outcome: "dropped", adaptive, change: routing };
  if (adaptive.option === "resample") {
    const resolved = await resampleOnce(ctx, routing);
    const found = (resolved.rollouts ?? []).filter((r) => r.success).length;
    return {
      ...resolved,
      adaptive,
      change: { ...resolved.change, adaptiveResamples: { attempts: config.groupSize, successes: found } },
    };
  }
  const slots = chosen.flatMap((s) => Array.from({ length: adaptive.allocation[s.id] ?? 0 }, () => s));
  return {
    ...(await rescueUnder(ctx, failure, slots, adaptive.spend, { ...routing, extraSpent: adaptive.spend })),
    adaptive,
  };
};

/** A rescue mode: how it resolves an all-fail group, and whether it reads the profiles (then re-anchoring applies). */
export interface RescueModeEntry {
  resolve: RescueModeFn;
  usesProfiles: boolean;
}

/**
 * What an arm does with an all-fail group, by name (as verl registers its advantage estimators):
 * drop it, resample it under H0, rescue it under random or routed siblings, or choose among these
 * per group by expected yield (adaptive). `ArmConfig.rescue`
 * is derived from these keys.
 */
export const RESCUE_MODES = {
  none: { resolve: dropGroup, usesProfiles: false },
  router: { resolve: siblingRescue(chooseByRouter), usesProfiles: true },
  random: { resolve: siblingRescue(chooseRandom), usesProfiles: false },
  "resample-h0": { resolve: resampleUnderH0, usesProfiles: false },
  adaptive: { resolve: adaptiveRescue, usesProfiles: true },
} satisfies Record<string, RescueModeEntry>;
export type RescueModeName = keyof typeof RESCUE_MODES;
