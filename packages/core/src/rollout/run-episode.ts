import type { HarnessSpec, Trigger } from "../harness/spec.ts";
import { matchesEvent } from "../harness/spec.ts";
import type { ActionChoice, EnvOutcome, EnvSession, Environment, Policy } from "../ports.ts";
import type { Task } from "../task.ts";
import { createRng, type Rng } from "../util/rng.ts";
import type { DialogueTurn, PolicyObservation, Rollout, TrajectoryStep } from "./types.ts";

/** An env message as a text agent reads it: the tool output, then the harness's notes. */
export function withNotes(text: string, notes: readonly string[]): string {
  return [text, ...notes.map((n) => `[harness] ${n}`)].filter(Boolean).join("\n");
}

export const SUBMIT = "submit";

interface ArmedTrigger {
  trigger: Trigger;
  fires: number;
  skill: boolean;
  fromTask: boolean;
}

/**
 * Runs one episode of `task` under `harness` with `policy`, applying the harness at its hooks:
 * task start (instruction cues, recon), before a tool runs (pre-action checks), after an
 * observation (triggers, skills), at submit (commit gate), and every step (budget).
 * The harness never executes an action the policy did not sample, except a forced submit,
 * which is marked `forced` so the update can mask it.
 *
 * @example
 * const rollout = await runEpisode(task, pool.base, 17, { env, policy });
 */
export async function runEpisode(
  task: Task,
  harness: HarnessSpec,
  seed: number,
  deps: { env: Environment; policy: Policy },
): Promise<Rollout> {
  const rng = createRng(seed);
  const policyRng = rng.fork("policy");
  const tools = deps.env.tools(task);
  const session = await deps.env.start(task, rng.fork("env"));
  try {
    return await drive(task, harness, seed, session, tools, deps.policy, policyRng);
  } finally {
    await session.close?.();
  }
}

async function drive(task: Task, harness: HarnessSpec, seed: number, session: EnvSession, tools: string[], policy: Policy, policyRng: Rng): Promise<Rollout> {
  const policyVersion = policy.version();
  // Text environments (an LLM agent) also get the tool output, the harness's notes and the dialogue so far.
  const textual = session.initial.text !== undefined;
  const dialogue: DialogueTurn[] = [];
  let text = session.initial.text;
  if (textual) {
    for (const name of harness.recon.preview) {
      const preview = await session.preview?.(name);
      if (preview) text = `${text}\n\n${preview}`;
    }
  }
  const instruction = textual ? [task.instruction, harness.instruction.systemAppend].filter(Boolean).join("\n\n") : undefined;
  const maxTurns = harness.budget.maxTurns;
  const armed: ArmedTrigger[] = [
    ...task.cues.map((trigger) => ({ trigger, fires: 0, skill: false, fromTask: true })),
    ...harness.instruction.cues.map((trigger) => ({ trigger, fires: 0, skill: false, fromTask: false })),
    ...harness.postObservation.map((trigger) => ({ trigger, fires: 0, skill: false, fromTask: false })),
    ...harness.skills.entries.map((trigger) => ({ trigger, fires: 0, skill: true, fromTask: false })),
  ].sort((a, b) => b.trigger.priority - a.trigger.priority);

  let event = session.initial.event;
  let facts = session.initial.facts;
  const events: string[] = [event];
  const steps: TrajectoryStep[] = [];
  const taken = new Set<string>();
  const failedActions = new Set<string>();
  const preBlocks = harness.preAction.map(() => 0);
  let gateBlocks = 0;
  let pendingHints: string[] = [];
  let lastAction = "";
  let repeats = 0;
  let outcome: EnvOutcome | undefined;

  for (let turn = 0; turn < maxTurns && !outcome; turn++) {
    const turnsLeft = maxTurns - turn;
    const signals = repeats >= 2 ? [event, `repeat:${repeats}`] : [event];
    const hints = [...pendingHints];
    const baseHints: string[] = [];
    const notes: string[] = [];
    pendingHints = [];
    if (turn <= harness.recon.first.length) {
      const nextRecon = harness.recon.first.find((a) => !taken.has(a));
      if (nextRecon) hints.push(nextRecon);
    }
    let skillsUsed = 0;
    for (const a of armed) {
      if (a.fires >= a.trigger.maxFires || !signals.some((s) => matchesEvent(a.trigger.on, s))) continue;
      if (a.skill && skillsUsed >= harness.skills.topK) continue;
      if (a.skill) skillsUsed++;
      a.fires++;
      hints.push(a.trigger.hint);
      if (a.fromTask) baseHints.push(a.trigger.hint);
      if (a.trigger.text) notes.push(a.trigger.text);
    }
    if (harness.budget.warnAt !== undefined && turnsLeft <= harness.budget.warnAt) {
      hints.push(SUBMIT);
      if (harness.budget.warnText) notes.push(harness.budget.warnText.replace("{left}", String(turnsLeft)));
    }

    const observation: PolicyObservation = {
      family: task.family,
      tools,
      event,
      facts,
      taskTags: task.tags,
      hints: [...new Set(hints)].filter((h) => tools.includes(h)),
      baseHints: [...new Set(baseHints)].filter((h) => tools.includes(h)),
      failedActions: [...failedActions],
      turnsLeft,
      ...(textual ? { instruction, text: text ?? "", notes, history: [...dialogue] } : {}),
    };
    const forced = harness.budget.forceSubmitAt !== undefined && turnsLeft <= harness.budget.forceSubmitAt;
    const choice: ActionChoice = forced ? { action: SUBMIT, logProb: 0 } : await policy.act(observation, policyRng);
    const action = choice.action;
    repeats = action === lastAction ? repeats + 1 : 1;
    lastAction = action;
    taken.add(action);

    let result: string;
    let resultText: string | undefined;
    const blocking = harness.preAction.findIndex(
      (c, i) => c.action === action && c.requires.some((f) => !facts.includes(f)) && (c.mode === "warn" || preBlocks[i]! < c.maxBlocks),
    );
    const check = blocking >= 0 ? harness.preAction[blocking] : undefined;
    const gateFacts = action === SUBMIT && session.inspectSubmit ? [...facts, ...session.inspectSubmit(choice.args ?? {})] : facts;
    const gateMissing =
      action === SUBMIT && harness.commitGate && gateBlocks < harness.commitGate.maxBlocks
        ? harness.commitGate.requires.filter((f) => !gateFacts.includes(f))
        : [];
    if (check?.mode === "block") {
      preBlocks[blocking]!++;
      result = `blocked:${action}`;
      resultText = textual ? `The harness blocked ${action}: do ${check.requires.join(", ")} first.` : undefined;
      if (check.hint) pendingHints.push(check.hint);
    } else if (gateMissing.length > 0) {
      gateBlocks++;
      result = `gate:${gateMissing[0]}`;
      resultText = textual ? `The answer was not accepted (${gateMissing[0]}); fix it and commit again.` : undefined;
      if (harness.commitGate?.hint) pendingHints.push(harness.commitGate.hint);
    } else if (action === SUBMIT) {
      result = "submitted";
      outcome = await session.finish("submitted", choice.args);
    } else {
      if (check?.hint) pendingHints.push(check.hint);
      const step = await session.act(action, choice.args);
      result = step.event;
      resultText = step.text;
      if (step.facts.length !== facts.length || step.facts.some((f) => !facts.includes(f))) failedActions.clear();
      facts = step.facts;
      if (step.event.startsWith("error:")) failedActions.add(action);
      if (step.done) outcome = await session.finish("submitted");
    }
    const intercepted = result.startsWith("blocked:") || result.startsWith("gate:");
    steps.push({ observation, action, logProb: choice.logProb, forced, intercepted, result, ...(textual ? { args: choice.args, resultText } : {}), ...(choice.tokens ? { tokens: choice.tokens } : {}) });
    if (textual) {
      dialogue.push(
        { role: "env", text: withNotes(text ?? "", notes) },
        { role: "agent", text: choice.text ?? "", action, ...(choice.args ? { args: choice.args } : {}), ...(choice.rawArguments !== undefined ? { raw: choice.rawArguments } : {}) },
      );
      text = resultText ?? result;
    }
    event = result;
    if (!events.includes(event)) events.push(event);
  }

  if (!outcome) {
    outcome = await session.finish("budget-exhausted");
    events.push("budget:exhausted");
  } else if (!outcome.success) {
    events.push("submit:rejected");
  }
  return {
    id: `${task.id}:${harness.id}:v${policyVersion}:s${seed}`,
    taskId: task.id,
    family: task.family,
    harnessId: harness.id,
    policyVersion,
    seed,
    steps,
    reward: outcome.reward,
    success: outcome.success,
    failureTags: outcome.failureTags,
    events,
    behaviours: outcome.behaviours,
  };
}
