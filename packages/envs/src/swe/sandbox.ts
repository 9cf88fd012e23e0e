import { z } from "zod";
import { EnvironmentServerError } from "../errors.ts";
import type { SweInstance } from "./protocol.ts";
import { SweRexRuntime } from "./swerex-client.ts";

/** Where the repository is checked out inside a sandbox (SWE-bench's images use /testbed). */
export const TESTBED = "/testbed";

/** One instance's container: commands, files and patches, all inside its checkout. */
export interface Sandbox {
  run(command: string, timeoutS?: number): Promise<{ output: string; exitCode: number | null }>;
  read(path: string): Promise<string | undefined>;
  write(path: string, content: string): Promise<void>;
  /** Applies a unified diff in the checkout; false (and nothing changed) when it does not apply. */
  applyPatch(patch: string): Promise<boolean>;
  /** Releases the container; called once, also on failure. */
  close(): Promise<void>;
}

/** Starts a fresh container for an instance (its checkout at the base commit). */
export interface SandboxProvider {
  open(instance: SweInstance): Promise<Sandbox>;
}

/** A sandbox over a SWE-ReX remote runtime, with `stop` to end its deployment. */
export class SweRexSandbox implements Sandbox {
  constructor(
    readonly runtime: SweRexRuntime,
    private readonly stop: () => Promise<void> = async () => undefined,
  ) {}

  async run(command: string, timeoutS?: number) {
    const r = await this.runtime.execute(`cd ${TESTBED} && ${command}`, timeoutS);
    return { output: `${r.stdout}${r.stderr}`, exitCode: r.exit_code };
  }

  async read(path: string) {
    const r = await this.runtime.readFile(path.startsWith("/") ? path : `${TESTBED}/${path}`);
    return r.success ? r.content : undefined;
  }

  async write(path: string, content: string) {
    await this.runtime.writeFile(path.startsWith("/") ? path : `${TESTBED}/${path}`, content);
  }

  async applyPatch(patch: string) {
    if (!patch.trim()) return true;
    const file = `${TESTBED}/.harness-s.patch`;
    await this.write(file, patch);
    const r = await this.run(`git apply --whitespace=nowarn ${file}; code=$?; rm -f ${file}; exit $code`);
    return r.exitCode === 0;
  }

  async close() {
    await this.runtime.close().catch(() => undefined);
    await this.stop();
  }
}

const Deployed = z.object({ runtime_url: z.string().url(), auth_token: z.string().min(1).max(500) });

/**
 * Containers from a deployment service answering `POST /deployments {instance_id}` with
 * `{runtime_url, auth_token}` and `POST /deployments/<id>/stop` (the local fixture server does;
 * a service starting SWE-Gym's images behind SWE-ReX would answer the same two calls).
 *
 * @example
 * const provider = new DeploymentServiceProvider("http://127.0.0.1:8090");
 */
export class DeploymentServiceProvider implements SandboxProvider {
  constructor(
    readonly url: string,
    private readonly opts: { fetch?: typeof fetch; startTimeoutMs?: number } = {},
  ) {}

  async open(instance: SweInstance): Promise<Sandbox> {
    const doFetch = this.opts.fetch ?? fetch;
    let res: Response;
    try {
      res = await doFetch(`${this.url}/deployments`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ instance_id: instance.instance_id }),
        signal: AbortSignal.timeout(this.opts.startTimeoutMs ?? 300_000),
      });
    } catch (err) {
      throw new EnvironmentServerError(this.url, "/deployments", err instanceof Error ? err.message : String(err), err);
    }
    const text = await res.text();
    if (!res.ok)
      throw new EnvironmentServerError(this.url, "/deployments", `HTTP ${res.status}: ${text.slice(0, 300)}`);
    const parsed = Deployed.safeParse(JSON.parse(text));
    if (!parsed.success) throw new EnvironmentServerError(this.url, "/deployments", "unexpected answer");
    const { runtime_url, auth_token } = parsed.data;
    const id = runtime_url.split("/").at(-1)!;
    const stop = async () => {
      await doFetch(`${this.url}/deployments/${id}/stop`, {
        method: "POST",
        body: "{}",
        signal: AbortSignal.timeout(30_000),
      }).catch(() => undefined);
    };
    return new SweRexSandbox(new SweRexRuntime(runtime_url, auth_token, { fetch: doFetch }), stop);
  }
}
