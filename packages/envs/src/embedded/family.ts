import type { EnvOutcome, Trigger } from "@harness-s/core";

export type ToolRole = "inspect" | "act" | "navigate" | "verify" | "finalize";

/** Mutable episode state of one embedded task. */
export interface EpisodeState {
  req: ReadonlySet<string>;
  params: Record<string, number | string | boolean>;
  facts: Set<string>;
  n: Record<string, number>;
  flags: Set<string>;
}

/** A family of embedded tasks: tools, latent requirements and the rules of one episode. */
export interface FamilyModel {
  name: string;
  tools: string[];
  /** What each tool's documentation says it is for, as a harness proposer reads it. */
  toolRoles: Record<string, ToolRole>;
  /** Latent requirements this family can draw; order matters for split construction. */
  requirements: [string, string, string];
  /** Visible tag that a requirement tends to come with (shown with some probability). */
  tagFor: Record<string, string>;
  /** What the instruction says when it cues a requirement (the same hooks a harness uses). */
  cuesFor: Record<string, Trigger[]>;
  step(state: EpisodeState, action: string): string;
  grade(state: EpisodeState, reason: "submitted" | "budget-exhausted"): EnvOutcome;
}

export function cue(on: string, hint: string, text: string): Trigger {
  return { on, hint, text, priority: 0, maxFires: 3 };
}

export function outcome(success: boolean, failureTags: string[], behaviours: Record<string, boolean> = {}): EnvOutcome {
  return { success, reward: success ? 1 : 0, failureTags: success ? [] : failureTags, behaviours };
}
