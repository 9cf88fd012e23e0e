import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const SANDBOX = fileURLToPath(new URL("./sqlite-sandbox.mjs", import.meta.url));

export type Reply =
  | {
      id: number;
      ok: true;
      kind?: "rows" | "ok";
      text?: string;
      rowCount?: number;
      truncated?: boolean;
      changes?: number;
      snapshot?: Uint8Array;
    }
  | { id: number; ok: false; message: string; ended?: true };

/** One sandbox process holding at most one in-memory database at a time; `call` answers or rejects on timeout. */
export class Sandbox {
  private next = 0;
  /** Databases opened here so far (one per rollout it served). */
  opened = 0;
  private readonly waiting = new Map<number, (r: Reply) => void>();
  private constructor(private readonly proc: ChildProcess) {
    proc.on("message", (m: Reply & { ready?: true }) => {
      if (m.ready) return;
      const answer = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      answer?.(m);
    });
    proc.on("exit", () => {
      for (const w of this.waiting.values())
        w({ id: -1, ok: false, message: "the sandbox process ended", ended: true });
      this.waiting.clear();
    });
  }

  /** A sandbox under a data-size limit of `memoryBytes` (set by the shell that execs Node). */
  static start(memoryBytes: number): Promise<Sandbox> {
    const limitKb = Math.ceil(memoryBytes / 1024);
    const proc = spawn(
      "/bin/sh",
      ["-c", `ulimit -d ${limitKb} && exec "$0" "$@"`, process.execPath, "--max-old-space-size=96", SANDBOX],
      {
        serialization: "advanced",
        // Its stderr is kept (the last 2 KB) for the start error, not passed on: a sandbox that dies
        // of a statement's memory is an event of the episode, not of the rollout process.
        stdio: ["ignore", "ignore", "pipe", "ipc"],
      },
    );
    let stderr = "";
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-2048);
    });
    return new Promise((resolve, reject) => {
      proc.once("message", () => {
        const sandbox = new Sandbox(proc);
        sandbox.idle();
        resolve(sandbox);
      });
      proc.once("error", reject);
      proc.once("exit", (code) =>
        reject(
          new Error(`the SQLite sandbox exited with code ${code} before it was ready: ${stderr.trim() || "no output"}`),
        ),
      );
    });
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null && this.proc.connected;
  }

  /** An idle sandbox never keeps its parent alive (a call in flight does); it exits with the parent. */
  idle(): void {
    this.proc.unref();
    (this.proc.channel as { unref?: () => void } | undefined)?.unref?.();
    (this.proc.stderr as { unref?: () => void } | null)?.unref?.();
  }

  call(message: Record<string, unknown>, timeoutMs: number): Promise<Reply | "timeout"> {
    const id = ++this.next;
    if (!this.alive) return Promise.resolve({ id, ok: false, message: "the sandbox process ended", ended: true });
    if (message.op === "open") this.opened++;
    (this.proc.channel as { ref?: () => void } | undefined)?.ref?.();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        this.kill();
        resolve("timeout");
      }, timeoutMs);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        if (this.waiting.size === 0) this.idle();
        resolve(r);
      });
      this.proc.send({ ...message, id });
    });
  }

  kill(): void {
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
  }
}

/** How sandbox processes are reused: each serves one rollout at a time, with a fresh database each. */
export interface SandboxReuse {
  /** Rollouts one sandbox process serves before it ends (1: a process per rollout). */
  rolloutsPerProcess: number;
  /** Idle processes kept for the next rollouts; more are ended as their rollouts close. */
  maxIdle: number;
}

/** Closing a rollout's database in its sandbox takes this long at most; past it the process ends. */
const CLOSE_MS = 5_000;

/**
 * Sandbox processes handed to one rollout at a time. A process comes back only when its rollout
 * closed cleanly (its database closed there, no statement timed out or crashed it) and it has
 * served fewer than `rolloutsPerProcess` rollouts; anything else ends it. Starting a Node process
 * costs about 100 ms of CPU, several times what a short rollout's statements cost.
 */
export class SandboxPool {
  private readonly spare: Sandbox[] = [];
  /** Sandbox processes started so far. */
  started = 0;

  constructor(
    private readonly memoryBytes: number,
    private readonly reuse: SandboxReuse,
  ) {}

  async take(): Promise<Sandbox> {
    for (let s = this.spare.pop(); s; s = this.spare.pop()) if (s.alive) return s;
    this.started++;
    return Sandbox.start(this.memoryBytes);
  }

  /** Takes back a sandbox whose rollout has ended; its database is closed first. */
  async give(sandbox: Sandbox): Promise<void> {
    if (!sandbox.alive || sandbox.opened >= this.reuse.rolloutsPerProcess || this.spare.length >= this.reuse.maxIdle)
      return sandbox.kill();
    const closed = await sandbox.call({ op: "close" }, CLOSE_MS);
    if (closed === "timeout" || !closed.ok || this.spare.length >= this.reuse.maxIdle) return sandbox.kill();
    this.spare.push(sandbox);
  }

  shutdown(): void {
    for (const s of this.spare.splice(0)) s.kill();
  }
}
