import type { HarnessSpec, Trigger } from "../harness/spec.ts";
import { matchesEvent } from "../harness/spec.ts";
import type { ActionChoice, EnvOutcome, EnvSession } from "../ports.ts";
import type { Task } from "../task.ts";

export const SUBMIT = "submit";

interface ArmedTrigger {
  trigger: Trigger;
  fires: number;
  skill: boolean;
  fromTask: boolean;
}

/** What the harness keeps track of during one episode. */
export interface EpisodeState {
  event: string;
  facts: string[];
  taken: Set<string>;
  failedActions: Set<string>;
  preBlocks: number[];
  gateBlocks: number;
  pendingHints: string[];
  /** Text agents: warnings of pre-action checks, shown with the next observation. */
  pendingNotes: string[];
  lastAction: string;
  repeats: number;
  armed: ArmedTrigger[];
}

/** The episode's starting state: the task's cues and the harness's triggers armed, by priority. */
export function startState(
  task: Task,
  harness: HarnessSpec,
  initial: { event: string; facts: string[] },
): EpisodeState {
  const armed: ArmedTrigger[] = [
    ...task.cues.map((trigger) => ({ trigger, fires: 0, skill: false, fromTask: true })),
    ...harness.instruction.cues.map((trigger) => ({ trigger, fires: 0, skill: false, fromTask: false })),
    ...harness.postObservation.map((trigger) => ({ trigger, fires: 0, skill: false, fromTask: false })),
    ...harness.skills.entries.map((trigger) => ({ trigger, fires: 0, skill: true, fromTask: false })),
  ].sort((a, b) => b.trigger.priority - a.trigger.priority);
  return {
    event: initial.event,
    facts: initial.facts,
    taken: new Set(),
    failedActions: new Set(),
    preBlocks: harness.preAction.map(() => 0),
    gateBlocks: 0,
    pendingHints: [],
    pendingNotes: [],
    lastAction: "",
    repeats: 0,
    armed,
  };
}

/**
 * The hints and notes of one turn: hints left by the last interception, the next recon action,
 * every armed trigger (or skill, up to `topK`) that matches the event or a repeat signal, and the
 * budget warning; `baseHints` and `baseNotes` are the part the task's own cues gave (what H0,
 * which has no hooks of its own, would show). Fires are counted here.
 */
export function turnHints(
  s: EpisodeState,
  harness: HarnessSpec,
  turn: number,
  turnsLeft: number,
): { hints: string[]; baseHints: string[]; notes: string[]; baseNotes: string[] } {
  const signals = s.repeats >= 2 ? [s.event, `repeat:${s.repeats}`] : [s.event];
  const hints = [...s.pendingHints];
  const baseHints: string[] = [];
  const notes: string[] = [...s.pendingNotes];
  const baseNotes: string[] = [];
  s.pendingHints = [];
  s.pendingNotes = [];
  if (turn <= harness.recon.first.length) {
    const nextRecon = harness.recon.first.find((a) => !s.taken.has(a));
    if (nextRecon) hints.push(nextRecon);
  }
  let skillsUsed = 0;
  for (const a of s.armed) {
    if (a.fires >= a.trigger.maxFires || !signals.some((x) => matchesEvent(a.trigger.on, x))) continue;
    if (a.skill && skillsUsed >= harness.skills.topK) continue;
    if (a.skill) skillsUsed++;
    a.fires++;
    hints.push(a.trigger.hint);
    if (a.fromTask) baseHints.push(a.trigger.hint);
    if (a.trigger.text) notes.push(a.trigger.text);
    if (a.fromTask && a.trigger.text) baseNotes.push(a.trigger.text);
  }
  if (harness.budget.warnAt !== undefined && turnsLeft <= harness.budget.warnAt) {
    hints.push(SUBMIT);
    if (harness.budget.warnText) notes.push(harness.budget.warnText.replace("{left}", String(turnsLeft)));
  }
  return { hints, baseHints, notes, baseNotes };
}

/**
 * Applies the chosen action through the harness: a pre-action check may block it, the commit
 * gate may refuse a submit, a submit grades the episode, anything else runs in the environment.
 */
export async function applyAction(
  s: EpisodeState,
  harness: HarnessSpec,
  choice: ActionChoice,
  session: EnvSession,
  textual: boolean,
): Promise<{ result: string; resultText?: string; outcome?: EnvOutcome }> {
  const action = choice.action;
  const blocking = harness.preAction.findIndex(
    (c, i) =>
      c.action === action &&
      c.requires.some((f) => !s.facts.includes(f)) &&
      (c.mode === "warn" || s.preBlocks[i]! < c.maxBlocks),
  );
  const check = blocking >= 0 ? harness.preAction[blocking] : undefined;
  const gateFacts =
    action === SUBMIT && session.inspectSubmit ? [...s.facts, ...session.inspectSubmit(choice.args ?? {})] : s.facts;
  const gateMissing =
    action === SUBMIT && harness.commitGate && s.gateBlocks < harness.commitGate.maxBlocks
      ? harness.commitGate.requires.filter((f) => !gateFacts.includes(f))
      : [];
  if (check?.mode === "block") {
    s.preBlocks[blocking]!++;
    if (check.hint) s.pendingHints.push(check.hint);
    return {
      result: `blocked:${action}`,
      ...(textual ? { resultText: `The harness blocked ${action}: do ${check.requires.join(", ")} first.` } : {}),
    };
  }
  if (gateMissing.length > 0) {
    s.gateBlocks++;
    if (harness.commitGate?.hint) s.pendingHints.push(harness.commitGate.hint);
    return {
      result: `gate:${gateMissing[0]}`,
      ...(textual ? { resultText: `The answer was not accepted (${gateMissing[0]}); fix it and commit again.` } : {}),
    };
  }
  if (action === SUBMIT) return { result: "submitted", outcome: await session.finish("submitted", choice.args) };
  if (check?.hint) s.pendingHints.push(check.hint);
  if (check && textual)
    s.pendingNotes.push(
      `Warning: ${action} ran before ${check.requires.filter((f) => !s.facts.includes(f)).join(", ")}.`,
    );
  const step = await session.act(action, choice.args);
  if (step.facts.length !== s.facts.length || step.facts.some((f) => !s.facts.includes(f))) s.failedActions.clear();
  s.facts = step.facts;
  if (step.event.startsWith("error:")) s.failedActions.add(action);
  return {
    result: step.event,
    ...(step.text !== undefined ? { resultText: step.text } : {}),
    ...(step.done ? { outcome: await session.finish("submitted") } : {}),
  };
}
