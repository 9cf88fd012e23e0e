import { z } from "zod";
import { Datum } from "../protocol/v2.ts";
import type { RecordedTurn } from "./upstream.ts";
import { appendAll } from "../util/append.ts";

/** A gateway episode as it comes back: the harness that ran it, each model turn, and the trainable datums. */
export const GatewayTrajectory = z.object({
  episodeId: z.string(),
  taskId: z.string(),
  harnessId: z.string(),
  decisionId: z.string(),
  status: z.enum(["running", "ended", "closed", "failed"]),
  /** The reward the agent reported (`POST …/reward`), null until then. */
  reward: z.number().nullable(),
  /** The harness's text added to the instruction (the first user message). */
  systemText: z.string(),
  turns: z.array(
    z.object({
      action: z.string(),
      content: z.string().nullable(),
      toolCalls: z.array(z.object({ name: z.string(), arguments: z.string() })),
      /** What the harness added to the message this turn answered (notes, warnings, a refused commit's reason). */
      harnessNotes: z.array(z.string()),
      /** The turn's new prompt ids and its completion ids, when the endpoint returned them. */
      tokens: z.object({ prompt: z.number().int().min(0), completion: z.number().int().min(0) }).optional(),
    }),
  ),
  /**
   * Protocol v2 datums: the episode's ids as the model endpoint gave them, mask 1 exactly on the
   * model's own tokens, so every harness insertion (prompt ids) carries mask 0; the advantage is
   * the reported reward (0 before one is reported): centre it over your group before training.
   */
  datums: z.array(Datum),
  /** Why some turns are in no datum (the endpoint returned no token ids for them). */
  untrained: z.string().optional(),
});
export type GatewayTrajectory = z.infer<typeof GatewayTrajectory>;

/** An episode's trajectory from what it recorded: its turns as the agent saw them, and the datums. */
export function trajectoryOf(e: {
  id: string;
  taskId: string;
  harnessId: string;
  decisionId: string;
  systemText: string;
  status: GatewayTrajectory["status"];
  reward: number | null;
  turns: readonly RecordedTurn[];
}): GatewayTrajectory {
  const { datums, untrained } = episodeDatums(e.id, e.turns, e.reward ?? 0);
  return {
    episodeId: e.id,
    taskId: e.taskId,
    harnessId: e.harnessId,
    decisionId: e.decisionId,
    status: e.status,
    reward: e.reward,
    systemText: e.systemText,
    turns: e.turns.map((t) => ({
      action: t.action,
      content: t.turn.reply.content,
      toolCalls: t.turn.reply.toolCalls,
      harnessNotes: t.harnessNotes,
      ...(t.turn.promptIds && t.turn.completionIds
        ? { tokens: { prompt: t.turn.promptIds.length, completion: t.turn.completionIds.length } }
        : {}),
    })),
    datums,
    ...(untrained ? { untrained } : {}),
  };
}

const startsWith = (xs: readonly number[], prefix: readonly number[]) =>
  prefix.length <= xs.length && prefix.every((x, i) => xs[i] === x);

/**
 * The datums of an episode's turns: one token sequence while each turn continues the last (its
 * prompt repeats the sequence so far, as vLLM returns it, or is the new ids only, as a policy
 * worker continuing the same completion id returns it); a turn that does neither starts another.
 *
 * @example
 * const { datums } = episodeDatums("ep-1", policy.turns, 1);
 */
export function episodeDatums(
  episodeId: string,
  turns: readonly RecordedTurn[],
  advantage: number,
): { datums: Datum[]; untrained?: string } {
  const segments: { ids: number[]; mask: (0 | 1)[]; lp: number[] }[] = [];
  const missing: number[] = [];
  let current: (typeof segments)[number] | undefined;
  let previousId: string | undefined;
  turns.forEach(({ turn }, i) => {
    const { promptIds, completionIds, logprobs } = turn;
    if (!promptIds || !completionIds || !logprobs || logprobs.length !== completionIds.length) {
      missing.push(i);
      current = undefined;
      return;
    }
    let delta: readonly number[];
    if (current && startsWith(promptIds, current.ids)) delta = promptIds.slice(current.ids.length);
    else if (current && turn.id !== undefined && turn.id === previousId) delta = promptIds;
    else {
      current = { ids: [], mask: [], lp: [] };
      segments.push(current);
      delta = promptIds;
    }
    appendAll(appendAll(current.ids, delta), completionIds);
    appendAll(
      appendAll(
        current.mask,
        delta.map(() => 0 as const),
      ),
      completionIds.map(() => 1 as const),
    );
    appendAll(
      appendAll(
        current.lp,
        delta.map(() => 0),
      ),
      logprobs,
    );
    previousId = turn.id;
  });
  const datums = segments
    .filter((s) => s.ids.length >= 2)
    .map((s, k) => {
      s.mask[0] = 0;
      return Datum.parse({
        sample_id: `${episodeId}/${k}`,
        group_id: episodeId,
        ids: s.ids,
        loss_mask: s.mask,
        behaviour_logprobs: s.lp,
        advantage,
      });
    });
  return {
    datums,
    ...(missing.length
      ? { untrained: `turns ${missing.join(", ")}: the model endpoint returned no token ids and log-probabilities` }
      : {}),
  };
}
