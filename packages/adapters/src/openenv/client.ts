import WebSocket from "ws";
import { UNKNOWN_TOOL_PREFIX, failedCallEvent, genericObserver, type EventObserver } from "@harness-s/core/gateway";
import {
  HarnessSError,
  formatIssues,
  type EnvOutcome,
  type EnvSession,
  type EnvStep,
  type Environment,
  type Rng,
  type Task,
} from "@harness-s/core";
import { EnvironmentError } from "../errors.ts";
import { checkOutboundUrl, guardedLookup, type OutboundPolicy } from "../net/outbound.ts";
import { scrubError, secretScrubber } from "../policy/scrub-secrets.ts";
import { HarnessObservation, OpenEnvServerMessage, type OpenEnvAction, type OpenEnvStepResult } from "./protocol.ts";

export interface OpenEnvEnvironmentOptions {
  /** The server's base URL (http or https; its WebSocket session is at `/ws`). */
  url: string;
  /** What it may resolve to (see `checkOutboundUrl`): checked before and at every connection. */
  outbound: OutboundPolicy;
  /** Headers sent when the session opens (a caller's secret). */
  headers?: Record<string, string>;
  /** The environment's tools (its action names); the submit one among them. */
  tools: readonly string[];
  /** The tool that ends an episode and gets it graded. */
  submit: string;
  /** Reads a tool's output into events and facts when the server sends none of its own. */
  observer?: EventObserver;
  /** The reward at or above which an episode counts as solved (default 1). */
  successAt?: number;
  /** Longest wait for one answer. */
  timeoutMs?: number;
  maxMessageBytes?: number;
}

/** An OpenEnv WebSocket session: one request at a time, each answered or given up on at the deadline. */
class OpenEnvConnection {
  private readonly waiting: { resolve: (m: OpenEnvServerMessage) => void; reject: (e: Error) => void }[] = [];
  private ended?: Error;

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const next = this.waiting.shift();
      // What went wrong, never the message's own text (a parser's excerpt of it could carry a secret cut short).
      let value: unknown;
      try {
        value = JSON.parse(data.toString());
      } catch {
        next?.reject(new Error("the environment server sent a message that is not JSON"));
        return;
      }
      const parsed = OpenEnvServerMessage.safeParse(value);
      if (parsed.success) next?.resolve(parsed.data);
      else
        next?.reject(
          new Error(
            `the environment server sent a message outside the protocol (${formatIssues(parsed.error.issues).slice(0, 3).join("; ")})`,
          ),
        );
    });
    const fail = (err: Error) => {
      this.ended ??= err;
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    ws.on("close", (code) => fail(new Error(`the environment server closed the session (${code})`)));
    ws.on("error", (err) => fail(err));
  }

  static async open(url: string, opts: OpenEnvEnvironmentOptions): Promise<OpenEnvConnection> {
    const base = await checkOutboundUrl(url, opts.outbound);
    const target = new URL("ws", base.href.endsWith("/") ? base.href : `${base.href}/`);
    target.protocol = base.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(target, {
      lookup: guardedLookup(opts.outbound) as never,
      headers: opts.headers ?? {},
      handshakeTimeout: opts.timeoutMs ?? 30_000,
      maxPayload: opts.maxMessageBytes ?? 4 << 20,
      followRedirects: false,
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) =>
        reject(new Error(`the environment server refused the session (HTTP ${res.statusCode})`)),
      );
    });
    return new OpenEnvConnection(ws);
  }

  request(message: unknown, timeoutMs: number): Promise<OpenEnvServerMessage> {
    if (this.ended) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`the environment server did not answer within ${timeoutMs} ms`));
        this.ws.terminate();
      }, timeoutMs);
      this.waiting.push({
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.ws.send(JSON.stringify(message));
    });
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: "close" }));
    this.ws.close();
  }
}

/**
 * What a failed exchange with a caller's environment throws: an {@link EnvironmentError} (its
 * code says whose failure it was), its text with the session's secret headers masked (a server
 * that echoes the headers it got must not hand them to a log line or a rescue's status).
 */
function environmentFailure(scrub: (text: string) => string) {
  return (err: unknown): never => {
    if (err instanceof HarnessSError) throw scrubError(err, scrub);
    const message = err instanceof Error ? err.message : String(err);
    throw new EnvironmentError(scrub(message).slice(0, 2_000), { cause: scrubError(err, scrub) });
  };
}

/** An answer's observation as the harness reads it (`HarnessObservation`), refusing anything else. */
function observationOf(message: OpenEnvServerMessage): OpenEnvStepResult & { fields: HarnessObservation } {
  if (message.type === "error") throw new Error(`the environment server answered an error: ${message.data.message}`);
  if (message.type !== "observation")
    throw new Error(`the environment server answered ${message.type} where an observation was due`);
  const fields = HarnessObservation.safeParse(message.data.observation);
  if (!fields.success)
    throw new Error(
      `the environment server's observation is outside the protocol (${formatIssues(fields.error.issues).slice(0, 3).join("; ")})`,
    );
  return { ...message.data, fields: fields.data };
}

/** What the agent reads back for a call it got wrong (no call, one that does not parse, an unknown tool). */
function failedCallText(action: string, args: Record<string, unknown> | undefined): string {
  if (action.startsWith(UNKNOWN_TOOL_PREFIX))
    return `Error: there is no tool ${action.slice(UNKNOWN_TOOL_PREFIX.length)}; call one of the tools offered.`;
  if (failedCallEvent(action) === "error:no-tool-call")
    return "Error: no tool was called; call one of the tools offered.";
  return `Error: the tool call could not be read${typeof args?.error === "string" ? ` (${args.error.slice(0, 200)})` : ""}; call one of the tools with JSON arguments.`;
}

const textOf = (o: HarnessObservation): string =>
  o.text ?? (typeof o.result === "string" ? o.result : o.result !== undefined ? JSON.stringify(o.result) : "");

/**
 * An environment a caller runs, over the OpenEnv protocol: each episode a WebSocket session,
 * reset with the task's id, seed and reset arguments (a task's params named `reset:<key>`), each
 * tool call a `call_tool` step. Events and facts come from the server's observation when it sends
 * them (this project's `env-serve` does), else from `observer` reading the text; the reward and
 * outcome from the submit step. Every connection goes through the outbound guard.
 *
 * @example
 * const env = new OpenEnvEnvironment({ url: "http://envs.example.com:8000", outbound, tools: ["search", "submit"], submit: "submit" });
 */
export class OpenEnvEnvironment implements Environment {
  constructor(private readonly opts: OpenEnvEnvironmentOptions) {}

  tools(_task: Task): string[] {
    return [...this.opts.tools];
  }

  async start(task: Task, rng: Rng): Promise<EnvSession> {
    const opts = this.opts;
    const timeout = opts.timeoutMs ?? 30_000;
    const observer = opts.observer ?? genericObserver(task);
    const fails = environmentFailure(secretScrubber(Object.values(opts.headers ?? {})));
    const conn = await OpenEnvConnection.open(opts.url, opts).catch(fails);
    const reset = Object.fromEntries(
      Object.entries(task.params).flatMap(([k, v]) => (k.startsWith("reset:") ? [[k.slice(6), v]] : [])),
    );
    let first: ReturnType<typeof observationOf>;
    try {
      first = observationOf(
        await conn.request(
          {
            type: "reset",
            data: { task_id: task.id, seed: rng.int(2 ** 31), episode_id: `${task.id}-${rng.int(2 ** 31)}`, ...reset },
          },
          timeout,
        ),
      );
    } catch (err) {
      conn.close();
      return fails(err);
    }
    const facts = new Set(first.fields.facts ?? []);
    const toStep = (r: ReturnType<typeof observationOf>, action?: string, args?: Record<string, unknown>): EnvStep => {
      const text = textOf(r.fields);
      const seen =
        r.fields.event !== undefined
          ? { event: r.fields.event, facts: r.fields.facts ?? [] }
          : action
            ? observer.observe(action, args, text)
            : { event: "start", facts: [] };
      for (const f of seen.facts) facts.add(f);
      return { event: seen.event, facts: [...facts], done: r.done, text };
    };
    let closed = false;
    const close = async () => {
      if (!closed) conn.close();
      closed = true;
    };
    return {
      initial: toStep(first),
      act: async (action, args) => {
        // A call the model got wrong never reaches the server: it is a failed round, answered here.
        const failed = failedCallEvent(action);
        if (failed) return { event: failed, facts: [...facts], done: false, text: failedCallText(action, args) };
        const step: OpenEnvAction = { type: "call_tool", tool_name: action, arguments: args ?? {} };
        return toStep(
          await conn.request({ type: "step", data: step }, timeout).then(observationOf).catch(fails),
          action,
          args,
        );
      },
      finish: async (reason, args): Promise<EnvOutcome> => {
        if (reason !== "submitted") return { reward: 0, success: false, failureTags: ["no-commit"], behaviours: {} };
        const submitted = { type: "step", data: { type: "call_tool", tool_name: opts.submit, arguments: args ?? {} } };
        const r = await conn.request(submitted, timeout).then(observationOf).catch(fails);
        const reward = Math.min(1, Math.max(0, r.reward ?? 0));
        const success = r.fields.success ?? reward >= (opts.successAt ?? 1);
        return {
          reward,
          success,
          failureTags: r.fields.failure_tags ?? (success ? [] : ["unsolved"]),
          behaviours: r.fields.behaviours ?? {},
        };
      },
      close,
    };
  }
}
