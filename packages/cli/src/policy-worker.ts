import { execFile, spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort, ownChild } from "@harness-s/adapters/local";
import { UsageError } from "./flags.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

let checked: Promise<string> | undefined;

/**
 * Creates the worker's venv if it is missing or incomplete (`scripts/policy-worker-venv.sh`, from
 * the machine's local package indexes; about a minute the first time) and returns its python.
 * Checked once per process (the check itself takes seconds); a failed check is tried again next time.
 */
export function ensureWorkerVenv(log: (line: string) => void = () => undefined): Promise<string> {
  checked ??= promisify(execFile)("bash", [`${ROOT}scripts/policy-worker-venv.sh`], {
    cwd: ROOT,
    maxBuffer: 16 << 20,
  }).then(
    ({ stdout, stderr }) => {
      if (stderr.trim()) log(stderr.trim());
      return `${ROOT}${stdout.trim().split("\n").at(-1)}`;
    },
    (err: unknown) => {
      checked = undefined;
      throw err;
    },
  );
  return checked;
}

export interface WorkerOptions {
  model: string;
  port?: number;
  host?: string;
  token?: string;
  stateDir?: string;
  /**
   * The worker's own limits and settings, passed on as its flags (`maxEpisodes` → `--max-episodes`;
   * `chatTemplate`: a Jinja file used instead of the model's template; `chatPrompts`: `render` to
   * render every chat request whole, as vLLM does, instead of continuing its episode;
   * `servedModelName`: the name policies give the model, default the folder's).
   */
  tuning?: Partial<
    Record<
      | "device"
      | "maxPolicies"
      | "maxEpisodes"
      | "maxBodyMb"
      | "kvCacheMb"
      | "sampleTimeoutS"
      | "toolParser"
      | "chatTemplate"
      | "chatPrompts"
      | "servedModelName",
      string | number
    >
  >;
  /** Longest wait for `GET /healthz` to answer 200. */
  readyTimeoutMs?: number;
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * Starts the reference policy worker (`python -m harness_s_worker.launch`) and waits until its
 * `/healthz` answers; `stop` ends it (and the process group it leads).
 *
 * @example
 * const worker = await startPolicyWorker({ model: "tiny", token: "t" });
 * // … worker.url …
 * await worker.stop();
 */
export async function startPolicyWorker(
  opts: WorkerOptions,
  log: (line: string) => void = () => undefined,
): Promise<{ url: string; stop: () => Promise<void>; process: ChildProcess }> {
  const python = await ensureWorkerVenv(log);
  const port = opts.port || (await freePort());
  const host = opts.host ?? "127.0.0.1";
  const args = [
    "-m",
    "harness_s_worker.launch",
    "--model",
    opts.model,
    "--host",
    host,
    "--port",
    String(port),
    "--exit-with-parent",
  ];
  if (opts.token) args.push("--token", opts.token);
  if (opts.stateDir) args.push("--state-dir", opts.stateDir);
  for (const [name, value] of Object.entries(opts.tuning ?? {}))
    if (value !== undefined) args.push(`--${kebab(name)}`, String(value));
  const proc = ownChild(
    spawn(python, args, {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, TOKENIZERS_PARALLELISM: "false" },
    }),
  );
  const url = `http://${host}:${port}`;
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  };
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
  for (;;) {
    // Exit code 2: the worker refused its flags (its own message says which: a missing model folder, a port in use).
    if (proc.exitCode === 2) throw new UsageError("the policy worker refused to start (its message is above)");
    if (proc.exitCode !== null)
      throw new Error(`the policy worker exited with code ${proc.exitCode} before it was ready`);
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
      // Only this worker counts as ready: another process answering on the port is not it.
      if (res.ok && ((await res.json()) as { pid?: number }).pid === proc.pid) return { url, stop, process: proc };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the policy worker did not answer on ${url}/healthz within ${opts.readyTimeoutMs ?? 120_000} ms`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
