import type { EnvOutcome, EnvSession, EnvStep, Environment, Rng, Task } from "@harness-s/core";
import type { EpisodeState } from "./family.ts";
import { familyByName, misleadsParam } from "./suite.ts";

/** A side effect (see `SuiteOptions.sideEffects`) is silent until grading: the result is wrong. */
function misled(outcome: EnvOutcome, state: EpisodeState): EnvOutcome {
  if (!state.flags.has("misled") || !outcome.success) return outcome;
  return { ...outcome, success: false, reward: 0, failureTags: ["wrong-result"] };
}

/**
 * The embedded environment: every family of the suite behind the core's environment port.
 *
 * @example
 * const env = new EmbeddedEnvironment();
 * const session = await env.start(task, rng);
 */
export class EmbeddedEnvironment implements Environment {
  tools(task: Task): string[] {
    return familyByName(task.family).tools;
  }

  async start(task: Task, _rng: Rng): Promise<EnvSession> {
    const family = familyByName(task.family);
    const state: EpisodeState = {
      req: new Set(task.requirements),
      params: task.params,
      facts: new Set(),
      n: {},
      flags: new Set(),
    };
    let finished: EnvOutcome | undefined;
    return {
      initial: { event: "start", facts: [], done: false },
      async act(action: string): Promise<EnvStep> {
        if (finished) throw new Error("episode already finished");
        if (!family.tools.includes(action))
          return { event: "error:unknown-tool", facts: [...state.facts], done: false };
        const event = family.step(state, action);
        if (task.params[misleadsParam(action)]) state.flags.add("misled");
        return { event, facts: [...state.facts], done: false };
      },
      async finish(reason) {
        finished ??= misled(family.grade(state, reason), state);
        return finished;
      },
    };
  }
}
