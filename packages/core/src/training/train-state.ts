import { z } from "zod";
import { Counts, Profile, addEvidence } from "../profile/profile.ts";
import { AdaptiveChoice } from "./adaptive.ts";
import { RoutingDecision } from "../voting/router.ts";
import { AuditRecord } from "./audit.ts";
import type { Rollout } from "../rollout/types.ts";

/** Rollouts spent by kind (every environment episode counts); `total` is their sum. */
export const RolloutCounts = z.object({
  train: z.number().int(),
  rescue: z.number().int(),
  resample: z.number().int(),
  reanchor: z.number().int(),
  total: z.number().int(),
});
export type RolloutCounts = z.infer<typeof RolloutCounts>;

/** What happened to one group of a step: trained on as it was, replaced by a rescue, resampled under H0, or dropped. */
export const GroupOutcome = z.enum(["used", "replaced", "resampled", "dropped"]);
export type GroupOutcome = z.infer<typeof GroupOutcome>;

/** What one training step did, group by group (experiment step records extend it with the run, seed and arm). */
export const StepRecord = z.object({
  step: z.number().int().min(1),
  policyVersion: z.number().int(),
  rollouts: RolloutCounts,
  groups: z.array(
    z.object({
      taskId: z.string(),
      meanReward: z.number(),
      allFail: z.boolean(),
      outcome: GroupOutcome,
      chosen: z.array(z.string()).optional(),
      /** The adaptive mode's choice for this all-fail group and the estimates behind it. */
      adaptive: AdaptiveChoice.optional(),
    }),
  ),
});
export type StepRecord = z.infer<typeof StepRecord>;

/** What happened to a run's groups: all-fail ones rescued (replaced or dropped), of how many. */
export const RescueCounters = z.object({
  triggered: z.number().int(),
  replaced: z.number().int(),
  dropped: z.number().int(),
  allFailGroups: z.number().int(),
  groups: z.number().int(),
});
export type RescueCounters = z.infer<typeof RescueCounters>;

/** H0 Avg@3 on the curve's train tasks after a step (0: before training). */
export const CurvePoint = z.object({ step: z.number().int(), h0TrainAvgAt3: z.number() });
/** Fresh rescue utility per sibling at a re-anchoring; NaN (no rescue seen) is kept as null, which JSON can hold. */
export const UtilitySnapshot = z.object({
  step: z.number().int(),
  values: z.record(z.string(), z.number().nullable()),
});

/**
 * Everything a trainer needs to continue an arm after its last finished step, besides the policy
 * itself (which lives at the policy endpoint and must still be at `policyVersion`). Batches,
 * rollout seeds and router draws derive from the step, so a continued run equals an
 * uninterrupted one.
 */
export const TrainerState = z.object({
  arm: z.string(),
  /** The last finished step (0 before the first); training continues at step + 1. */
  step: z.number().int().min(0),
  policyVersion: z.number().int().min(0),
  counts: RolloutCounts,
  extraLeft: z.number().int().min(0),
  probePriority: z.array(z.string()),
  diagnosticRollouts: z.number().int().min(0),
  curve: z.array(CurvePoint),
  utilities: z.array(UtilitySnapshot),
  rescue: RescueCounters,
  audits: z.array(AuditRecord),
  decisions: z.array(RoutingDecision),
  /** Routing decisions made before `decisions` and left out of this state; they still count for the audit cadence. */
  decisionsOmitted: z.number().int().min(0).default(0),
  profiles: z.record(z.string(), Profile),
  chosenCounts: z.record(z.string(), z.number().int()),
  /** What the adaptive mode's H0 resamples found in this run (its H0 option's evidence). */
  adaptiveResamples: Counts.default({ attempts: 0, successes: 0 }),
});
export type TrainerState = z.infer<typeof TrainerState>;

/**
 * One arm's training result: its state without what only a continuation needs (step, version,
 * budget left, probe order), with the rollouts spent by kind as `rollouts`.
 */
export const TrainResult = TrainerState.omit({
  step: true,
  policyVersion: true,
  extraLeft: true,
  probePriority: true,
  counts: true,
}).extend({
  rollouts: RolloutCounts,
});
export type TrainResult = z.infer<typeof TrainResult>;

/** The counts with `total` set to the sum of the four kinds. */
export function withTotal(counts: RolloutCounts): RolloutCounts {
  return { ...counts, total: counts.train + counts.rescue + counts.resample + counts.reanchor };
}

/** Utility values as JSON can hold them: NaN (no rescue seen) becomes null. */
export function nullForNaN(values: Record<string, number | null>): Record<string, number | null> {
  return Object.fromEntries(Object.entries(values).map(([k, x]) => [k, x !== null && Number.isFinite(x) ? x : null]));
}

/**
 * The state without its routing decisions (they are counted, not kept), for stores with an item
 * size limit: a state then stops growing with every rescue. A run continued from it equals the
 * uninterrupted one except that its result lists only the decisions made after the continuation.
 *
 * @example
 * await records.save({ ...record, units: [{ arm, seed, policyId, state: withoutDecisions(state) }] });
 */
export function withoutDecisions(state: TrainerState): TrainerState {
  return { ...state, decisions: [], decisionsOmitted: state.decisionsOmitted + state.decisions.length };
}

/**
 * What resolving one all-fail group changed, for the trainer to apply (a mode reads the trainer's
 * state and never writes it): rollouts spent, rescue counters, the budget used, evidence for the
 * profiles, and the routing decision and audit made.
 */
export interface StateChange {
  counts?: { rescue?: number; resample?: number };
  rescue?: { triggered?: number; replaced?: number; dropped?: number };
  extraSpent?: number;
  /** Rescue rollouts whose harnesses' profiles learn from them (in order). */
  evidence?: { rollouts: readonly Rollout[]; rescueOf: string[]; taskTags: string[] };
  decision?: RoutingDecision;
  audit?: AuditRecord;
  diagnosticRollouts?: number;
  /** H0 resample rollouts the adaptive mode ran, and how many succeeded. */
  adaptiveResamples?: Counts;
}

/**
 * Applies what resolving one all-fail group changed (see `StateChange`) to the trainer's own
 * state, in the order the mode made it: the siblings chosen, the decision and its audit, the
 * rollouts spent, the profiles' evidence.
 */
export function applyStateChange(
  state: TrainerState,
  resolved: { chosen?: readonly string[]; change?: StateChange },
): void {
  const { change = {}, chosen = [] } = resolved;
  for (const id of chosen) state.chosenCounts[id] = (state.chosenCounts[id] ?? 0) + 1;
  if (change.decision) state.decisions.push(change.decision);
  if (change.audit) state.audits.push(change.audit);
  state.diagnosticRollouts += change.diagnosticRollouts ?? 0;
  state.extraLeft -= change.extraSpent ?? 0;
  state.counts.rescue += change.counts?.rescue ?? 0;
  state.counts.resample += change.counts?.resample ?? 0;
  state.rescue.triggered += change.rescue?.triggered ?? 0;
  state.rescue.replaced += change.rescue?.replaced ?? 0;
  state.rescue.dropped += change.rescue?.dropped ?? 0;
  if (change.adaptiveResamples) {
    const { attempts, successes } = state.adaptiveResamples;
    state.adaptiveResamples = {
      attempts: attempts + change.adaptiveResamples.attempts,
      successes: successes + change.adaptiveResamples.successes,
    };
  }
  const { rollouts = [], rescueOf = [], taskTags = [] } = change.evidence ?? {};
  for (const r of rollouts)
    state.profiles[r.harnessId] = addEvidence(state.profiles[r.harnessId]!, r, { rescueOf, taskTags });
}
