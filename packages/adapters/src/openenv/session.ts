import {
  createRng,
  hash32,
  type EnvSession,
  type Environment,
  type EnvStep,
  type Task,
  type TaskSource,
} from "@harness-s/core";
import {
  OpenEnvClientMessage,
  type OpenEnvErrorCode,
  type OpenEnvResetData,
  type OpenEnvServerMessage,
  type OpenEnvTool,
} from "./protocol.ts";

/**
 * What a session needs of its server: the environment, its tasks, how tools are described, and how a seedless reset
 * gets its seed.
 */
export interface OpenEnvSessionDeps {
  env: Environment;
  tasks: TaskSource;
  describeTools: (actions: readonly string[]) => OpenEnvTool[];
  submit: string;
  /** The tasks a reset without `task_id` draws from (by its seed); none: such a reset is refused. */
  resetTasks?: readonly string[];
  /** A seed for a reset that names neither a seed nor an episode id. */
  drawSeed: () => number;
}

/** The longest error text a session sends back (the OpenEnv client reads up to 10,000 characters). */
const MAX_ERROR_CHARS = 2_000;

export const errorAnswer = (
  code: OpenEnvErrorCode,
  message: string,
): Extract<OpenEnvServerMessage, { type: "error" }> => ({
  type: "error",
  data: { code, message: message.slice(0, MAX_ERROR_CHARS) },
});

/**
 * The task a seed picks among `ids`: the one at position seed mod n (counted from 0, negative
 * seeds wrapping), so seeds 0 … n−1 visit every task once, in the listed order.
 */
export function taskIdOfSeed(ids: readonly string[], seed: number): string | undefined {
  if (ids.length === 0) return undefined;
  return ids[((seed % ids.length) + ids.length) % ids.length];
}

const stepObservation = (step: EnvStep) => ({ text: step.text ?? "", event: step.event, facts: step.facts });

type Episode = { task: Task; session: EnvSession; steps: number; id: string; seed: number; finished: boolean };

/**
 * One client's session: at most one episode at a time, ended by submit, a new reset, close or a
 * dropped connection. Every message gets an answer (an error message for one it cannot serve);
 * nothing the client sends makes it throw.
 */
export class OpenEnvSession {
  private episode?: Episode;

  constructor(private readonly deps: OpenEnvSessionDeps) {}

  /** A text frame: JSON of one client message. */
  async handle(raw: string): Promise<OpenEnvServerMessage | "close"> {
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return errorAnswer("INVALID_JSON", "not JSON: a message is one JSON object {type, data}");
    }
    return this.dispatch(value);
  }

  /** A message already read as JSON. */
  async dispatch(value: unknown): Promise<OpenEnvServerMessage | "close"> {
    const got = OpenEnvClientMessage.safeParse(value);
    if (!got.success)
      return errorAnswer(
        "INVALID_MESSAGE",
        `not a message of this protocol: ${got.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`,
      );
    const message = got.data;
    try {
      switch (message.type) {
        case "reset":
          return await this.reset(message.data);
        case "step":
          return await this.step(message.data);
        case "state":
          return { type: "state", data: this.state() };
        case "close":
          return "close";
      }
    } catch (err) {
      return errorAnswer("EXECUTION_ERROR", err instanceof Error ? err.message : String(err));
    }
  }

  private state() {
    const ep = this.episode;
    return {
      episode_id: ep?.id ?? null,
      task_id: ep?.task.id ?? null,
      seed: ep?.seed ?? null,
      step_count: ep?.steps ?? 0,
    };
  }

  private async reset(data: OpenEnvResetData): Promise<OpenEnvServerMessage> {
    await this.end();
    const seed = data.seed ?? (data.episode_id ? hash32(data.episode_id) : this.deps.drawSeed());
    const taskId = data.task_id ?? taskIdOfSeed(this.deps.resetTasks ?? [], seed);
    if (!taskId)
      return errorAnswer(
        "UNKNOWN_TASK",
        "reset needs a task_id: this server has no training tasks to draw one from a seed",
      );
    const task = await this.deps.tasks.get(taskId);
    if (!task)
      return errorAnswer("UNKNOWN_TASK", `reset needs a task_id this server knows (got ${JSON.stringify(taskId)})`);
    const id = data.episode_id ?? `${task.id}-${seed}-${Date.now().toString(36)}`;
    const session = await this.deps.env.start(task, createRng(seed));
    this.episode = { task, session, steps: 0, id, seed, finished: false };
    const tools = this.deps.describeTools(this.deps.env.tools(task));
    const about = { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction };
    return {
      type: "observation",
      data: { observation: { ...stepObservation(session.initial), tools, task: about }, reward: null, done: false },
    };
  }

  private async step(action: Extract<OpenEnvClientMessage, { type: "step" }>["data"]): Promise<OpenEnvServerMessage> {
    const ep = this.episode;
    if (!ep || ep.finished) return errorAnswer("NO_EPISODE", "no episode: send reset first");
    const tools = this.deps.env.tools(ep.task);
    if (action.type === "list_tools")
      return {
        type: "observation",
        data: { observation: { tools: this.deps.describeTools(tools) }, reward: null, done: false },
      };
    if (!tools.includes(action.tool_name)) return errorAnswer("TOOL_NOT_FOUND", `no tool ${action.tool_name}`);
    ep.steps++;
    if (action.tool_name === this.deps.submit) {
      ep.finished = true;
      this.episode = undefined;
      let outcome: Awaited<ReturnType<EnvSession["finish"]>>;
      try {
        outcome = await ep.session.finish("submitted", action.arguments);
      } finally {
        await ep.session.close?.().catch(() => undefined);
      }
      const observation = {
        text: "submitted",
        success: outcome.success,
        failure_tags: outcome.failureTags,
        behaviours: outcome.behaviours,
      };
      return { type: "observation", data: { observation, reward: outcome.reward, done: true } };
    }
    const step = await ep.session.act(action.tool_name, action.arguments);
    return { type: "observation", data: { observation: stepObservation(step), reward: null, done: step.done } };
  }

  /** Ends the episode in progress, ungraded (a new reset, close, or a dropped connection). */
  async end(): Promise<void> {
    const ep = this.episode;
    this.episode = undefined;
    if (!ep || ep.finished) return;
    await ep.session.finish("budget-exhausted").catch(() => undefined);
    await ep.session.close?.().catch(() => undefined);
  }
}
