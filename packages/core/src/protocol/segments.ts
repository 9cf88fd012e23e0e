import { datumFromTurns, type Datum } from "./v2.ts";

/** One sampled turn as an endpoint that renders whole prompts reports it: the prompt it sampled from, in full. */
export interface WholePromptTurn {
  promptIds: readonly number[];
  completionIds: readonly number[];
  logprobs: readonly number[];
  /** The completion counts (mask 1); otherwise it sits at mask 0 like the prompt. */
  trained: boolean;
}

/** Whether `ids` begins with every id of `prefix`, in order. */
export const extendsIds = (ids: readonly number[], prefix: readonly number[]): boolean =>
  prefix.length <= ids.length && prefix.every((id, i) => ids[i] === id);

/**
 * The token rows of an episode whose turns each name their whole prompt: one row while every
 * turn's prompt extends the ids before it (the previous prompt and completion: what the
 * environment and the harness added since is the rest of the prompt, at mask 0), and a new row,
 * from the turn's own prompt, at each turn whose prompt does not (a chat template that rewrites
 * earlier turns, or a completion that does not re-render as sampled): the prefix check. Never a
 * row whose ids are not what each completion was sampled after. Rows without a trained token are
 * left out; `segmented` says the episode came apart, whichever rows are left.
 *
 * @example
 * const { datums, segmented } = segmentedDatums("r1#0", "task-1", turns, 0.5);
 */
export function segmentedDatums(
  sampleId: string,
  groupId: string,
  turns: readonly WholePromptTurn[],
  advantage: number,
): { datums: Datum[]; segmented: boolean } {
  const segments: { ids: number[]; turns: WholePromptTurn[] }[] = [];
  for (const turn of turns) {
    const current = segments.at(-1);
    if (current && extendsIds(turn.promptIds, current.ids)) {
      current.turns.push({ ...turn, promptIds: turn.promptIds.slice(current.ids.length) });
      current.ids = [...turn.promptIds, ...turn.completionIds];
    } else segments.push({ ids: [...turn.promptIds, ...turn.completionIds], turns: [turn] });
  }
  const datums = segments
    .map((s, k) => ({ s, k }))
    .filter(({ s }) => s.turns.some((t) => t.trained && t.completionIds.length > 0))
    .map(({ s, k }) =>
      datumFromTurns(segments.length > 1 ? `${sampleId}/${k}` : sampleId, groupId, s.turns, advantage),
    );
  return { datums, segmented: segments.length > 1 };
}
