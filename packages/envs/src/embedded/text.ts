import type { EnvSession, EnvStep, Environment, Rng, Task } from "@harness-s/core";
import type { FamilyRendering } from "../registry.ts";

/** The embedded suite's tools as the JSON schemas an LLM sees (no arguments; `submit` ends the task). */
/** The system message of a text agent on the embedded suite (the CLI's and the cloud's token policies). */
export const EMBEDDED_AGENT_SYSTEM =
  "You are an agent solving a task with tools. Each turn, call exactly one tool. Call submit when the task is done.";

export function embeddedToolSchemas(tools: readonly string[]) {
  return tools.map((name) => ({
    type: "function" as const,
    function: {
      name,
      description: name === "submit" ? "submit your work and end the task" : `run the ${name} tool`,
      parameters: { type: "object", properties: {} },
    },
  }));
}

/** The suite as a token policy sees it: the agent system text, its tools as JSON schemas, events and facts as text. */
export const embeddedRendering: FamilyRendering = {
  system: EMBEDDED_AGENT_SYSTEM,
  toolSchemas: embeddedToolSchemas,
  env: (base) => new TextEnvironment(base),
};

/** One environment answer as text: the event, then the facts known so far. */
export function renderStep(step: Pick<EnvStep, "event" | "facts">): string {
  return [`Result: ${step.event}`, `Known: ${step.facts.length ? step.facts.join(", ") : "nothing yet"}`].join("\n");
}

/**
 * The embedded suite as a text environment, so an LLM policy can run on it: every answer gets a
 * `text` (event and facts), which makes the episode runner give the policy the instruction, the
 * tool output, the harness's notes and the dialogue so far. Events, facts, grading and harness
 * hooks are the symbolic suite's own, unchanged.
 *
 * @example
 * const env = new TextEnvironment(new EmbeddedEnvironment());
 */
export class TextEnvironment implements Environment {
  constructor(private readonly inner: Environment) {}

  tools(task: Task): string[] {
    return this.inner.tools(task);
  }

  async start(task: Task, rng: Rng): Promise<EnvSession> {
    const session = await this.inner.start(task, rng);
    const withText = (step: EnvStep): EnvStep => ({ ...step, text: step.text ?? renderStep(step) });
    return {
      initial: withText(session.initial),
      act: async (action, args) => withText(await session.act(action, args)),
      finish: (reason, args) => session.finish(reason, args),
      ...(session.preview ? { preview: (name: string) => session.preview!(name) } : {}),
      ...(session.inspectSubmit
        ? { inspectSubmit: (args: Record<string, unknown>) => session.inspectSubmit!(args) }
        : {}),
      ...(session.close ? { close: () => session.close!() } : {}),
    };
  }
}
