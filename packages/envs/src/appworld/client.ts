import type { z } from "zod";
import { EnvironmentServerError } from "../errors.ts";
import { Evaluation, Executed, Initialized, TaskCompleted } from "./protocol.ts";

/** How long one call to an environment server may take, and the most bytes of its answer. */
export const APPWORLD_LIMITS = { callTimeoutMs: 60_000, maxReplyBytes: 2 * 1024 * 1024 } as const;

/**
 * One AppWorld environment server. No call is retried here: `execute` runs the agent's code, so
 * a repeat could run it twice; a failed call is an {@link EnvironmentServerError} and the episode
 * that made it fails (its server is released by the pool).
 *
 * @example
 * const server = new AppWorldClient("http://127.0.0.1:8000");
 * const { instruction } = await server.initialize("82e2fac_1", "exp1");
 */
export class AppWorldClient {
  constructor(
    readonly url: string,
    private readonly opts: { fetch?: typeof fetch; callTimeoutMs?: number } = {},
  ) {}

  initialize(taskId: string, experimentName: string) {
    return this.call("/initialize", { task_id: taskId, experiment_name: experimentName }, Initialized);
  }

  execute(taskId: string, code: string) {
    return this.call("/execute", { task_id: taskId, code }, Executed);
  }

  taskCompleted(taskId: string) {
    return this.call("/task_completed", { task_id: taskId }, TaskCompleted);
  }

  evaluate(taskId: string): Promise<Evaluation> {
    return this.call("/evaluate", { task_id: taskId, suppress_errors: true }, Evaluation);
  }

  async close(taskId: string): Promise<void> {
    await this.call("/close", { task_id: taskId }, undefined);
  }

  private async call<S extends z.ZodType>(path: string, body: unknown, schema: S | undefined): Promise<z.infer<S>> {
    let res: Response;
    try {
      res = await (this.opts.fetch ?? fetch)(`${this.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.callTimeoutMs ?? APPWORLD_LIMITS.callTimeoutMs),
      });
    } catch (err) {
      throw new EnvironmentServerError(this.url, path, err instanceof Error ? err.message : String(err), err);
    }
    const text = await res.text();
    if (text.length > APPWORLD_LIMITS.maxReplyBytes)
      throw new EnvironmentServerError(this.url, path, `answer larger than ${APPWORLD_LIMITS.maxReplyBytes} bytes`);
    if (!res.ok) throw new EnvironmentServerError(this.url, path, `HTTP ${res.status}: ${text.slice(0, 300)}`);
    if (!schema) return undefined as z.infer<S>;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new EnvironmentServerError(this.url, path, "answer is not JSON", err);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new EnvironmentServerError(
        this.url,
        path,
        `unexpected answer: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    return parsed.data;
  }
}
