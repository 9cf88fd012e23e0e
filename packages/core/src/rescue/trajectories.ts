import { z } from "zod";
import { ValidationError } from "../errors.ts";
import { SUBMIT } from "../rollout/episode-hooks.ts";
import { queryInteger } from "../util/storable.ts";
import type { Rollout } from "../rollout/types.ts";
import type { CallerPolicies } from "../dispatch/rollout-source.ts";
import { ownedBy } from "../access/keys.ts";
import type { RescueJobStore } from "./job-record.ts";
import type { RolloutStore } from "../rollout/store.ts";

/**
 * One rescued rollout as a trainer takes it: the first prompt's ids, then every later id (the
 * model's completions, and between them the environment's and the harness's text), with the
 * behaviour log-probability of each completion id (0 elsewhere) and the loss mask (1 exactly on
 * the ids the policy sampled: tool outputs and every harness insertion are 0). A rollout whose
 * turns did not each extend the ids before them (a chat template that rewrites earlier turns, at
 * an endpoint sampled messages in) comes as several rows of the same index, in order, each with
 * its own prompt: `segmented`.
 */
export const RescueTrajectory = z.object({
  index: z.number().int(),
  harness_id: z.string(),
  decision_id: z.string(),
  weight_version: z.number().int(),
  reward: z.number(),
  success: z.boolean(),
  finish_reason: z.enum(["submitted", "budget-exhausted"]),
  failure_tags: z.array(z.string()),
  prompt_ids: z.array(z.number().int()),
  completion_ids: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  loss_mask: z.array(z.union([z.literal(0), z.literal(1)])),
  /** "sampled": as the policy saw them; "base": re-rendered under H0's prompt and re-scored at the endpoint. */
  context: z.enum(["sampled", "base"]),
  /** One of several rows of this rollout, each exact on its own (never one row with a wrong mask). */
  segmented: z.boolean(),
});
export type RescueTrajectory = z.infer<typeof RescueTrajectory>;

/** A page of a rescue's trajectories: rows when the caller names none, and at most. */
export const TRAJECTORY_PAGE = { defaultLimit: 16, maxLimit: 64, maxCursor: Number.MAX_SAFE_INTEGER } as const;

export const TrajectoryQuery = z.object({
  context: z.enum(["sampled", "base"]).default("sampled"),
  /** The first rollout index of the page. */
  cursor: queryInteger(0, TRAJECTORY_PAGE.maxCursor).default(0),
  limit: queryInteger(1, TRAJECTORY_PAGE.maxLimit).default(TRAJECTORY_PAGE.defaultLimit),
});
export type TrajectoryQuery = z.infer<typeof TrajectoryQuery>;

export const TrajectoryPage = z.object({ trajectories: z.array(RescueTrajectory), next: z.number().int().nullable() });
export type TrajectoryPage = z.infer<typeof TrajectoryPage>;

const finishOf = (r: Rollout) =>
  r.steps.at(-1)?.action === SUBMIT ? ("submitted" as const) : ("budget-exhausted" as const);

/**
 * A page of a caller rescue's stored rollouts as token rows (see {@link RescueTrajectory}), in
 * index order; only the key that started it may read them. A rescue that sampled this service's
 * own policy has no token rows (400).
 *
 * @example
 * const page = await rescueTrajectories("rsc_1", TrajectoryQuery.parse({}), deps, key);
 */
export async function rescueTrajectories(
  id: string,
  query: TrajectoryQuery,
  deps: { jobs: RescueJobStore; rollouts: RolloutStore; callers?: CallerPolicies },
  key: { id: string; scopes: readonly string[] },
): Promise<TrajectoryPage> {
  const job = await ownedBy(deps.jobs, key, "rescue").get(id);
  if (!job.caller || !deps.callers)
    throw new ValidationError("rescue", [
      "trajectories are token-level: this rescue sampled the service's own policy, not a policy endpoint of yours",
    ]);
  const stored = (await deps.rollouts.list(id))
    .sort((a, b) => a.index - b.index)
    .filter((r) => r.index >= query.cursor);
  const page = stored.slice(0, query.limit);
  const rows = await deps.callers.datums(
    job.caller,
    page.map((p) => p.rollout),
    query.context,
  );
  const trajectories = page.flatMap(({ index, rollout }, i) =>
    (rows[i]?.datums ?? []).map((d) => {
      // The prompt is everything before the first sampled id (under H0's context, as the replay rendered it).
      const firstSampled = d.loss_mask.indexOf(1);
      const prompt = d.ids.slice(0, firstSampled < 0 ? d.ids.length : firstSampled);
      return {
        index,
        harness_id: rollout.harnessId,
        decision_id: job.decisionId,
        weight_version: rollout.policyVersion,
        reward: rollout.reward,
        success: rollout.success,
        finish_reason: finishOf(rollout),
        failure_tags: rollout.failureTags,
        prompt_ids: prompt,
        completion_ids: d.ids.slice(prompt.length),
        logprobs: d.behaviour_logprobs.slice(prompt.length),
        loss_mask: d.loss_mask.slice(prompt.length),
        context: query.context,
        segmented: rows[i]!.segmented,
      };
    }),
  );
  const after = stored[page.length];
  return { trajectories, next: after ? after.index : null };
}
