import type { EnvOutcome, EnvSession, EnvStep, Environment, Rng, Task } from "@harness-s/core";
import { EnvironmentServerError } from "../errors.ts";
import type { AppWorldClient } from "./client.ts";
import { EpisodeSignals } from "./episode-signals.ts";
import type { AppWorldServerPool } from "./server-pool.ts";

/**
 * The agent's tools: run Python against the task's apps (`apis.<app>.<api>(…)`), and finish (`complete_task`, then
 * evaluation).
 */
export const APPWORLD_TOOLS = ["execute", "submit"] as const;

const EXCEPTION = /\b(\w+(?:Error|Exception))\b/;
const UNAUTHORIZED = /\b401\b|unauthori[sz]ed|not logged in|access token/i;
/** The most of one execution's output an agent reads. */
export const APPWORLD_OUTPUT_CHARS = 4_000;

/** What one execution's output says, as an event the harness can react to. */
export function executionEvent(output: string): string {
  if (UNAUTHORIZED.test(output)) return "app:unauthorized";
  const exception = EXCEPTION.exec(output);
  if (exception) return `exec:error:${exception[1]}`;
  if (output.includes("Traceback")) return "exec:error:Traceback";
  return "exec:ok";
}

const clip = (s: string) =>
  s.length > APPWORLD_OUTPUT_CHARS
    ? `${s.slice(0, APPWORLD_OUTPUT_CHARS)}\n… (${s.length - APPWORLD_OUTPUT_CHARS} more characters)`
    : s;

/**
 * AppWorld behind the core's environment port: each episode holds one server of the pool (the
 * task initialised on it, released when the episode closes, also on failure); `execute` runs the
 * agent's code there; `submit` marks the task complete (with its `answer`) unless the code did,
 * then evaluates. Reward is the share of the task's tests that pass, success all of them.
 * Failure tags and behaviours are read from the code and outputs ({@link EpisodeSignals}).
 *
 * @example
 * const env = new AppWorldEnvironment(new AppWorldServerPool(urls, systemClock), "exp1");
 */
export class AppWorldEnvironment implements Environment {
  constructor(
    private readonly pool: AppWorldServerPool,
    private readonly experimentName: string,
  ) {}

  tools(_task: Task): string[] {
    return [...APPWORLD_TOOLS];
  }

  async start(task: Task, _rng: Rng): Promise<EnvSession> {
    try {
      return new AppWorldSession(task.id, await this.pool.lend(task.id, this.experimentName));
    } catch (err) {
      if (!(err instanceof EnvironmentServerError)) throw err;
      return serverFailedSession(err);
    }
  }
}

class AppWorldSession implements EnvSession {
  readonly initial: EnvStep;
  private readonly signals = new EpisodeSignals();
  private closed = false;

  constructor(
    private readonly taskId: string,
    private readonly lease: { server: AppWorldClient; instruction: string; release: () => Promise<void> },
  ) {
    this.initial = { event: "start", facts: this.signals.facts(), done: false, text: lease.instruction };
  }

  private failed: EnvironmentServerError | undefined;

  async act(action: string, args?: Record<string, unknown>): Promise<EnvStep> {
    if (this.failed)
      return { event: SERVER_FAILED_EVENT, facts: this.signals.facts(), done: true, text: this.failed.message };
    const code = typeof args?.code === "string" ? args.code : undefined;
    if (action !== "execute" || code === undefined)
      return {
        event: "error:tool-call",
        facts: this.signals.facts(),
        done: false,
        text: 'Call execute with {"code": "<python>"} or submit.',
      };
    let output: string;
    try {
      output = await this.lease.server.execute(this.taskId, code);
    } catch (err) {
      if (!(err instanceof EnvironmentServerError)) throw err;
      this.failed = err;
      return { event: SERVER_FAILED_EVENT, facts: this.signals.facts(), done: true, text: err.message };
    }
    const event = executionEvent(output);
    this.signals.record(code, event);
    return { event, facts: this.signals.facts(), done: false, text: clip(output) };
  }

  /**
   * The "api-docs" preview: the apps this task's world has, from its own docs app. A server that fails here ends the
   * episode at its first step.
   */
  async preview(name: string): Promise<string | undefined> {
    if (name !== "api-docs") return undefined;
    try {
      const apps = await this.lease.server.execute(this.taskId, "print(apis.api_docs.show_app_descriptions())");
      return `Apps (apis.api_docs.show_app_descriptions()):\n${clip(apps)}`;
    } catch (err) {
      if (!(err instanceof EnvironmentServerError)) throw err;
      this.failed = err;
      return undefined;
    }
  }

  async finish(reason: "submitted" | "budget-exhausted", args?: Record<string, unknown>): Promise<EnvOutcome> {
    if (this.failed) return serverFailedOutcome(this.signals.behaviours());
    try {
      return await this.grade(reason, args);
    } catch (err) {
      if (!(err instanceof EnvironmentServerError)) throw err;
      this.failed = err;
      return serverFailedOutcome(this.signals.behaviours());
    }
  }

  private async grade(reason: "submitted" | "budget-exhausted", args?: Record<string, unknown>): Promise<EnvOutcome> {
    if (reason === "submitted" && !this.signals.completed) {
      // The answer travels as a JSON string literal (valid Python too) and is decoded there: nothing in it runs.
      const answer =
        args?.answer === undefined
          ? "None"
          : `__import__("json").loads(${JSON.stringify(JSON.stringify(args.answer))})`;
      const code = `apis.supervisor.complete_task(answer=${answer})`;
      this.signals.record(code, executionEvent(await this.lease.server.execute(this.taskId, code)));
    }
    const result = await this.lease.server.evaluate(this.taskId);
    return {
      reward: result.num_tests === 0 ? (result.success ? 1 : 0) : result.passes.length / result.num_tests,
      success: result.success,
      failureTags: result.success ? [] : this.signals.failureTags(result.failures.length > 0),
      behaviours: this.signals.behaviours(),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.lease.release();
  }
}

/**
 * The event of a step whose server failed (it died, timed out or answered outside the protocol): the episode ends
 * there, failed.
 */
export const SERVER_FAILED_EVENT = "env:server-failed";

const serverFailedOutcome = (behaviours: Record<string, boolean>): EnvOutcome => ({
  reward: 0,
  success: false,
  failureTags: ["server-failed"],
  behaviours,
});

/**
 * An episode whose server could not be had or initialised: its first step ends it, failed, with the error as its text.
 */
function serverFailedSession(err: EnvironmentServerError): EnvSession {
  return {
    initial: { event: "start", facts: [], done: false, text: `The environment server failed: ${err.message}` },
    act: async () => ({ event: SERVER_FAILED_EVENT, facts: [], done: true, text: err.message }),
    finish: async () => serverFailedOutcome({}),
  };
}
