import { EpisodeClosedError } from "./errors.ts";
import type { EnvOutcome, EnvSession, EnvStep, Environment } from "../ports.ts";
import type { Task } from "../task.ts";
import { INVALID_TOOL_CALL, NO_TOOL_CALL, UNKNOWN_TOOL_PREFIX, type ChatMsg } from "./chat-format.ts";
import type { UpstreamTurn } from "./upstream-turn.ts";

/**
 * What an agent's tool output means to the harness: the event its triggers match and the facts
 * it establishes (its checks and gate read them). The gateway sees only text, so each
 * environment brings an observer that reads its outputs (`genericObserver`, DBBench's own).
 */
export interface EventObserver {
  /**
   * The output's event, the facts it establishes, and any it undoes (e.g. a change leaves `state:verified` no longer
   * true).
   */
  observe(
    action: string,
    args: Record<string, unknown> | undefined,
    text: string,
  ): { event: string; facts: string[]; retract?: string[] };
  /** Facts about a pending submit call (e.g. "answer:well-formed"), read by the commit gate. */
  inspectSubmit?(args: Record<string, unknown>): string[];
  /** A harness's named preview (e.g. DBBench's "schema"), when the observer can produce it. */
  preview?(name: string): Promise<string | undefined>;
}
export type ObserverFactory = (task: Task) => EventObserver;

/** Any tool: `error:tool` when its output starts with "error", else `tool:ok`; failed calls by kind. */
export const genericObserver: ObserverFactory = () => ({
  observe: (action, _args, text) => ({
    event: failedCallEvent(action) ?? (/^\s*error\b/i.test(text) ? "error:tool" : "tool:ok"),
    facts: [`called:${action}`],
  }),
});

/** The event of a call the model got wrong (the agent answered it with an error of its own). */
export function failedCallEvent(action: string): string | undefined {
  if (action === INVALID_TOOL_CALL) return "error:tool-call";
  if (action === NO_TOOL_CALL) return "error:no-tool-call";
  if (action.startsWith(UNKNOWN_TOOL_PREFIX)) return "error:unknown-tool";
  return undefined;
}

/** What the gateway hands the agent: a model reply to return, a forced submit, the end, or an upstream error. */
export type RelayOut =
  | { kind: "reply"; turn: UpstreamTurn }
  | { kind: "forced-submit" }
  | { kind: "ended"; reason: "budget-exhausted" | "submitted" }
  | { kind: "upstream-error"; error: unknown };

/** What the agent sends on: the messages it added since the last reply (tool outputs), or the end of the episode. */
export type AgentInput = { kind: "turn"; messages: readonly ChatMsg[] } | { kind: "closed" };

/** An unbounded queue whose `take` waits for the next `put`. */
export class Mailbox<T> {
  private readonly items: T[] = [];
  private readonly waiters: ((value: T) => void)[] = [];

  put(value: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(value);
    else this.items.push(value);
  }

  take(): Promise<T> {
    return this.items.length
      ? Promise.resolve(this.items.shift()!)
      : new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** The two directions between an HTTP request and the episode running under the harness. */
export interface RelayChannel {
  toAgent: Mailbox<RelayOut>;
  fromAgent: Mailbox<AgentInput>;
}

/** The text of what the agent sent back: its tool and user messages, in order (its echo of our reply is skipped). */
export function agentText(messages: readonly ChatMsg[]): string {
  return messages
    .filter((m) => m.role !== "assistant")
    .map((m) => m.content ?? "")
    .join("\n");
}

/**
 * An environment whose tools the agent runs: each `act` hands the model's reply to the agent
 * and waits for the agent's next request, whose tool output the observer reads into an event.
 * A submit hands the reply out and ends the episode, unscored: the agent grades it (and may
 * report the reward to the gateway).
 */
export class RelayEnvironment implements Environment {
  constructor(
    private readonly episodeId: string,
    private readonly actions: readonly string[],
    private readonly channel: RelayChannel,
    private readonly observer: EventObserver,
    /** The model's reply for the action being applied; undefined when the harness forced it. */
    private readonly takeReply: () => UpstreamTurn | undefined,
  ) {}

  tools(): string[] {
    return [...this.actions];
  }

  async start(): Promise<EnvSession> {
    const { episodeId, channel, observer, takeReply } = this;
    const facts = new Set<string>();
    const handOut = () => {
      const turn = takeReply();
      channel.toAgent.put(turn ? { kind: "reply", turn } : { kind: "forced-submit" });
    };
    const session: EnvSession = {
      initial: { event: "start", facts: [], done: false, text: "" },
      async act(action, args): Promise<EnvStep> {
        handOut();
        const input = await channel.fromAgent.take();
        if (input.kind === "closed") throw new EpisodeClosedError(episodeId);
        const text = agentText(input.messages);
        const seen = observer.observe(action, args, text);
        for (const f of seen.retract ?? []) facts.delete(f);
        for (const f of seen.facts) facts.add(f);
        return { event: seen.event, facts: [...facts], done: false, text };
      },
      async finish(reason): Promise<EnvOutcome> {
        if (reason === "submitted") handOut();
        else channel.toAgent.put({ kind: "ended", reason });
        return {
          reward: 0,
          success: false,
          failureTags: reason === "submitted" ? ["unscored"] : ["no-commit"],
          behaviours: {},
        };
      },
      ...(observer.inspectSubmit
        ? { inspectSubmit: (args: Record<string, unknown>) => observer.inspectSubmit!(args) }
        : {}),
      ...(observer.preview ? { preview: (name: string) => observer.preview!(name) } : {}),
    };
    return session;
  }
}
