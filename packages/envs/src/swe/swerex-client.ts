import type { z } from "zod";
import { EnvironmentServerError, SandboxExceptionError } from "../errors.ts";
import { CommandResponse, Done, IsAlive, Observation, ReadFileResponse, SweRexException } from "./protocol.ts";

/** How long one call to a runtime may take beyond its command's own timeout, and the most bytes of an answer. */
export const SWEREX_LIMITS: {
  readonly graceMs: number;
  readonly commandSeconds: number;
  readonly maxReplyBytes: number;
} = {
  graceMs: 15_000,
  commandSeconds: 60,
  maxReplyBytes: 4 * 1024 * 1024,
};

/**
 * A SWE-ReX remote runtime (`swerex.runtime.remote`'s protocol: the server in a container), with
 * its API key in `X-API-Key`. No call is retried: a command may have run. A runtime's exception
 * (HTTP 511) is a {@link SandboxExceptionError}; a transport failure an {@link EnvironmentServerError}.
 *
 * @example
 * const rt = new SweRexRuntime("http://10.0.0.5:8000", process.env.SWEREX_KEY!);
 * const { stdout } = await rt.execute("git status", 30);
 */
export class SweRexRuntime {
  constructor(
    readonly url: string,
    private readonly apiKey: string,
    private readonly opts: { fetch?: typeof fetch } = {},
  ) {}

  async isAlive(): Promise<boolean> {
    return (await this.call("GET", "/is_alive", undefined, IsAlive, 10)).is_alive;
  }

  createSession(session = "default") {
    return this.call("POST", "/create_session", { session, session_type: "bash" }, Done, 30);
  }

  runInSession(command: string, timeoutS = SWEREX_LIMITS.commandSeconds, session = "default") {
    return this.call(
      "POST",
      "/run_in_session",
      { command, session, timeout: timeoutS, action_type: "bash" },
      Observation,
      timeoutS,
    );
  }

  closeSession(session = "default") {
    return this.call("POST", "/close_session", { session, session_type: "bash" }, Done, 30);
  }

  execute(command: string | string[], timeoutS = SWEREX_LIMITS.commandSeconds) {
    return this.call(
      "POST",
      "/execute",
      { command, timeout: timeoutS, shell: typeof command === "string" },
      CommandResponse,
      timeoutS,
    );
  }

  readFile(path: string) {
    return this.call("POST", "/read_file", { path }, ReadFileResponse, 30);
  }

  writeFile(path: string, content: string) {
    return this.call("POST", "/write_file", { path, content }, Done, 30);
  }

  async close(): Promise<void> {
    await this.call("POST", "/close", {}, undefined, 30);
  }

  private async call<S extends z.ZodType>(
    method: string,
    path: string,
    body: unknown,
    schema: S | undefined,
    timeoutS: number,
  ): Promise<z.infer<S>> {
    let res: Response;
    try {
      res = await (this.opts.fetch ?? fetch)(`${this.url}${path}`, {
        method,
        headers: { "content-type": "application/json", "x-api-key": this.apiKey },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutS * 1000 + SWEREX_LIMITS.graceMs),
      });
    } catch (err) {
      throw new EnvironmentServerError(this.url, path, err instanceof Error ? err.message : String(err), err);
    }
    const text = await res.text();
    if (text.length > SWEREX_LIMITS.maxReplyBytes)
      throw new EnvironmentServerError(this.url, path, `answer larger than ${SWEREX_LIMITS.maxReplyBytes} bytes`);
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch (err) {
      throw new EnvironmentServerError(this.url, path, `HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`, err);
    }
    if (res.status === 511) {
      const raised = SweRexException.safeParse(json);
      if (raised.success)
        throw new SandboxExceptionError(raised.data.swerexception.class_path, raised.data.swerexception.message);
    }
    if (!res.ok) throw new EnvironmentServerError(this.url, path, `HTTP ${res.status}: ${text.slice(0, 300)}`);
    if (!schema) return undefined as z.infer<S>;
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
