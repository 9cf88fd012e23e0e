import type { HarnessSpec } from "../harness/spec.ts";
import { SUBMIT, applyAction, startState, turnHints } from "./episode-hooks.ts";
import type { ActionChoice, EnvOutcome, EnvSession, Environment, Policy } from "../ports.ts";
import type { Task } from "../task.ts";
import { createRng, type Rng } from "../util/rng.ts";
import type { DialogueTurn, PolicyObservation, Rollout, TrajectoryStep } from "./types.ts";

/** An env message as a text agent reads it: the tool output, then the harness's notes. */
export function withNotes(text: string, notes: readonly string[]): string {
  return [text, ...notes.map((n) => `[harness] ${n}`)].filter(Boolean).join("\n");
}

export { SUBMIT } from "./episode-hooks.ts";

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
  deps: { env: Environment; policy: Omit<Policy, "update"> },
): Promise<Rollout> {
  const rng = createRng(seed);
  const policyRng = rng.fork("policy");
  const tools = deps.env.tools(task);
  const session = await deps.env.start(task, rng.fork("env"));
  try {
    return await drive(task, harness, seed, session, tools, deps.policy, policyRng);
  } finally {
    await session.close?.();
    await deps.policy.endEpisode?.(policyRng);
  }
}

async function drive(
  task: Task,
  harness: HarnessSpec,
  seed: number,
  session: EnvSession,
  tools: string[],
  policy: Omit<Policy, "update">,
  policyRng: Rng,
): Promise<Rollout> {
  const policyVersion = policy.version();
  // Text environments (an LLM agent) also get the tool output, the harness's notes and the dialogue so far.
  const textual = session.initial.text !== undefined;
  const dialogue: DialogueTurn[] = [];
  let text = session.initial.text;
  let baseText = text;
  if (textual) {
    for (const name of harness.recon.preview) {
      const preview = await session.preview?.(name);
      if (preview) text = `${text}\n\n${preview}`;
    }
  }
  const instruction = textual
    ? [task.instruction, harness.instruction.systemAppend].filter(Boolean).join("\n\n")
    : undefined;
  const maxTurns = harness.budget.maxTurns;
  const s = startState(task, harness, session.initial);
  const events: string[] = [s.event];
  const steps: TrajectoryStep[] = [];
  let outcome: EnvOutcome | undefined;

  for (let turn = 0; turn < maxTurns && !outcome; turn++) {
    const turnsLeft = maxTurns - turn;
    const { hints, baseHints, notes, baseNotes } = turnHints(s, harness, turn, turnsLeft);
    const observation: PolicyObservation = {
      family: task.family,
      tools,
      event: s.event,
      facts: s.facts,
      taskTags: task.tags,
      hints: offered(hints, tools),
      baseHints: offered(baseHints, tools),
      failedActions: [...s.failedActions],
      turnsLeft,
      ...(textual ? textualView(task, harness, instruction, text, baseText, notes, baseNotes, dialogue) : {}),
    };
    const forced = harness.budget.forceSubmitAt !== undefined && turnsLeft <= harness.budget.forceSubmitAt;
    const choice: ActionChoice = forced ? { action: SUBMIT, logProb: 0 } : await policy.act(observation, policyRng);
    const action = choice.action;
    s.repeats = action === s.lastAction ? s.repeats + 1 : 1;
    s.lastAction = action;
    s.taken.add(action);
    const applied = await applyAction(s, harness, choice, session, textual);
    outcome = applied.outcome;
    const { result, resultText } = applied;
    steps.push(trajectoryStep(observation, choice, forced, result, resultText, textual));
    if (textual) {
      dialogue.push(...dialogueTurn(text ?? "", notes, choice));
      text = resultText ?? result;
      baseText = text;
    }
    s.event = result;
    if (!events.includes(s.event)) events.push(s.event);
  }

  const closing = outcome ?? (await session.finish("budget-exhausted"));
  return finished(task, harness, seed, policyVersion, steps, events, closing, !outcome);
}

/** The part of the observation only a text agent gets: the instruction, the message, notes and the dialogue so far. */
function textualView(
  task: Task,
  harness: HarnessSpec,
  instruction: string | undefined,
  text: string | undefined,
  baseText: string | undefined,
  notes: string[],
  baseNotes: string[],
  dialogue: readonly DialogueTurn[],
): Partial<PolicyObservation> {
  return {
    instruction,
    text: text ?? "",
    notes,
    ...(Object.keys(harness.instruction.toolNotes).length ? { toolNotes: harness.instruction.toolNotes } : {}),
    history: [...dialogue],
    base: { instruction: task.instruction, text: baseText ?? "", notes: baseNotes },
  };
}

/**
 * The hints the policy is shown: each once, and only tools it has. A module function rather than a
 * closure in the turn loop: tsx's keep-names transform (the CLI's) names every closure it makes.
 */
function offered(names: readonly string[], tools: readonly string[]): string[] {
  return [...new Set(names)].filter((h) => tools.includes(h));
}

/** One turn's record: what the policy saw, what it chose, and whether the harness intercepted the action. */
function trajectoryStep(
  observation: PolicyObservation,
  choice: ActionChoice,
  forced: boolean,
  result: string,
  resultText: string | undefined,
  textual: boolean,
): TrajectoryStep {
  const intercepted = result.startsWith("blocked:") || result.startsWith("gate:");
  return {
    observation,
    action: choice.action,
    logProb: choice.logProb,
    forced,
    intercepted,
    result,
    ...(textual ? { args: choice.args, resultText } : {}),
    ...(choice.tokens ? { tokens: choice.tokens } : {}),
  };
}

/** What a text agent saw this turn (the env message with the harness's notes) and what it did. */
function dialogueTurn(text: string, notes: readonly string[], choice: ActionChoice): DialogueTurn[] {
  return [
    { role: "env", text: withNotes(text, notes) },
    {
      role: "agent",
      text: choice.text ?? "",
      action: choice.action,
      ...(choice.args ? { args: choice.args } : {}),
      ...(choice.rawArguments !== undefined ? { raw: choice.rawArguments } : {}),
    },
  ];
}

/** The rollout record, with the closing event: the budget ran out, or a submit was rejected. */
function finished(
  task: Task,
  harness: HarnessSpec,
  seed: number,
  policyVersion: number,
  steps: TrajectoryStep[],
  events: string[],
  outcome: EnvOutcome,
  exhausted: boolean,
): Rollout {
  if (exhausted) {
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
