import { withNotes, type PolicyObservation } from "@harness-s/core";
import type { ChatMessage } from "@harness-s/core/protocol";

/** What a text agent's observation looks like in H0's context (see `PolicyObservation.base`). */
export function underBase(obs: PolicyObservation): PolicyObservation {
  if (!obs.base) return obs;
  const { toolNotes: _sibling, ...rest } = obs;
  return {
    ...rest,
    instruction: obs.base.instruction,
    text: obs.base.text,
    notes: obs.base.notes,
    hints: obs.baseHints,
  };
}

/** One turn's message text: the tool output, the harness's notes, and each hint not already in a note. */
export function turnText(obs: PolicyObservation): string {
  const hints = obs.hints
    .filter((h) => !(obs.notes ?? []).some((n) => n.includes(h)))
    .map((h) => `suggested next tool: ${h}`);
  return withNotes(obs.text ?? obs.event, [...(obs.notes ?? []), ...hints]);
}

/** The first turn's messages: the system message, then the instruction with the first observation. */
export function firstMessages(system: string, obs: PolicyObservation): ChatMessage[] {
  return [
    { role: "system", content: system },
    { role: "user", content: [obs.instruction ?? "", turnText(obs)].filter(Boolean).join("\n\n") },
  ];
}

/** A later turn's message: a tool result after a tool call, a user message otherwise. */
export function nextMessage(obs: PolicyObservation, calledTool: boolean): ChatMessage {
  return calledTool ? { role: "tool", content: turnText(obs) } : { role: "user", content: turnText(obs) };
}

/** What a text agent reads at a turn, as one string (two renderings are the same turn when equal). */
const reads = (obs: PolicyObservation): string => `${obs.instruction ?? ""}\u0000${turnText(obs)}`;

/**
 * Whether a turn reads otherwise in H0's context (a rescue under a sibling's notes): its rows under H0 must be
 * re-scored there.
 */
export const readsDifferentlyUnderBase = (obs: PolicyObservation): boolean => reads(underBase(obs)) !== reads(obs);
