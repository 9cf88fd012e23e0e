import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { columnNames, type DbBenchRow, type DbTable } from "../data.ts";
import { truncate } from "../python.ts";
import { mysqlToSqlite } from "./mysql-dialect.ts";
import { errorClass, tablesHash, type SqlEngine, type SqlResult, type SqlSession } from "./engine.ts";
import { inspectStatement } from "./statement-guard.ts";

export interface SqliteOptions {
  /** Longest one statement may run, its rows' transfer included; then its process is killed and the database restored as it was before it. */
  statementMs: number;
  /** Rows read from one result at most (reading stops sooner, once the 800 characters the agent sees are full). */
  maxRows: number;
  /** Longest statement text accepted, in bytes. */
  maxStatementBytes: number;
  /**
   * Largest the rollout database may grow (SQLite's max_page_count × its 4 KiB pages); a write
   * past it fails as "database or disk is full". 16 MiB by default (DBBench's tables are a few
   * KB): each write's snapshot crosses to the parent, so the sandbox holds the database a few times over.
   */
  maxDatabaseBytes: number;
  /**
   * The sandbox process's data-size limit (RLIMIT_DATA): a statement that needs more fails, or
   * ends the sandbox (then the database is restored). It must hold the database about three times
   * over (the database, its serialised snapshot, the copy sent to the parent) besides the
   * statement's own working memory.
   */
  memoryBytes: number;
}

export const defaultSqliteOptions: SqliteOptions = {
  statementMs: 5_000,
  maxRows: 10_000,
  maxStatementBytes: 1 << 20,
  maxDatabaseBytes: 16 * 1024 * 1024,
  memoryBytes: 320 * 1024 * 1024,
};

const PAGE_BYTES = 4096;

const SANDBOX = fileURLToPath(new URL("./sqlite-sandbox.mjs", import.meta.url));

type Reply =
  | { id: number; ok: true; kind?: "rows" | "ok"; text?: string; rowCount?: number; truncated?: boolean; changes?: number; snapshot?: Uint8Array }
  | { id: number; ok: false; message: string; ended?: true };

/** One sandbox process holding one in-memory database; `call` answers or rejects on timeout. */
class Sandbox {
  private next = 0;
  private readonly waiting = new Map<number, (r: Reply) => void>();
  private constructor(private readonly proc: ChildProcess) {
    proc.on("message", (m: Reply & { ready?: true }) => {
      if (m.ready) return;
      const answer = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      answer?.(m);
    });
    proc.on("exit", () => {
      for (const w of this.waiting.values()) w({ id: -1, ok: false, message: "the sandbox process ended", ended: true });
      this.waiting.clear();
    });
  }

  /** A sandbox under a data-size limit of `memoryBytes` (set by the shell that execs Node). */
  static start(memoryBytes: number): Promise<Sandbox> {
    const limitKb = Math.ceil(memoryBytes / 1024);
    const proc = spawn("/bin/sh", ["-c", `ulimit -d ${limitKb} && exec "$0" "$@"`, process.execPath, "--max-old-space-size=96", SANDBOX], {
      serialization: "advanced",
      // Its stderr is kept (the last 2 KB) for the start error, not passed on: a sandbox that dies
      // of a statement's memory is an event of the episode, not of the rollout process.
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
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
      proc.once("exit", (code) => reject(new Error(`the SQLite sandbox exited with code ${code} before it was ready: ${stderr.trim() || "no output"}`)));
    });
  }

  /** An idle sandbox never keeps its parent alive (a call in flight does); it exits with the parent. */
  idle(): void {
    this.proc.unref();
    (this.proc.channel as { unref?: () => void } | undefined)?.unref?.();
    (this.proc.stderr as { unref?: () => void } | null)?.unref?.();
  }

  call(message: Record<string, unknown>, timeoutMs: number): Promise<Reply | "timeout"> {
    const id = ++this.next;
    if (this.proc.exitCode !== null || this.proc.signalCode !== null || !this.proc.connected)
      return Promise.resolve({ id, ok: false, message: "the sandbox process ended", ended: true });
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

/**
 * Embedded SQLite (better-sqlite3): one in-memory database per rollout, in a sandbox process of
 * its own. A statement runs only if {@link inspectStatement} allows it (no ATTACH, VACUUM, PRAGMA or
 * extension, temporary table, however it is commented, cased or spaced), at most `statementMs`
 * long with its rows' transfer (then the process is killed and the database restored from the
 * snapshot taken after the last statement that may have written: no write is lost or re-run), read
 * only as far as the agent sees it (800 characters, at most `maxRows` rows), in a database of at
 * most `maxDatabaseBytes` and a process of at most `memoryBytes`. MySQL's MD5 is registered so the table hash is AgentBench's
 * query verbatim; TEXT columns use NOCASE to approximate MySQL's case-insensitive collation;
 * MySQL's lexical differences (double-quoted strings, backslash escapes, identifiers starting
 * with a digit) are rewritten first ({@link mysqlToSqlite}). Known remaining differences (see
 * docs/benchmarks.md): accent-insensitive comparison, SUM/AVG over integers returning integers,
 * MySQL-only functions and syntax.
 *
 * @example
 * const engine = new SqliteEngine();
 * const db = await engine.open(row);
 */
export class SqliteEngine implements SqlEngine {
  readonly name = "sqlite" as const;
  readonly options: SqliteOptions;
  private readonly sessions = new Set<SqliteSession>();

  constructor(options: Partial<SqliteOptions> = {}) {
    this.options = { ...defaultSqliteOptions, ...options };
  }

  async open(row: DbBenchRow): Promise<SqlSession> {
    const tables = row.table.map((t: DbTable) => ({ name: t.table_name, columns: columnNames(t), rows: t.table_info.rows }));
    const session = await SqliteSession.start(tables, this.options, () => this.sessions.delete(session));
    this.sessions.add(session);
    return session;
  }

  async shutdown(): Promise<void> {
    for (const s of [...this.sessions]) await s.close();
  }

  /** An empty database in a sandbox process of its own (each rollout's isolation here), opened and closed. */
  async emptyDatabaseCycle(): Promise<void> {
    const session = await SqliteSession.start([], this.options, () => undefined);
    await session.close();
  }
}

type Tables = { name: string; columns: string[]; rows: unknown[][] }[];

class SqliteSession implements SqlSession {
  readonly engine = "sqlite" as const;
  /** The database as the last statement that may have written left it; restored after a timeout or a crash (none yet: the tables as loaded). */
  private snapshot?: Uint8Array;

  private constructor(
    private sandbox: Sandbox | undefined,
    private readonly tables: Tables,
    private readonly options: SqliteOptions,
    private readonly onClose: () => void,
  ) {}

  static async start(tables: Tables, options: SqliteOptions, onClose: () => void): Promise<SqliteSession> {
    const session = new SqliteSession(undefined, tables, options, onClose);
    session.sandbox = await session.fresh();
    return session;
  }

  /** A new sandbox holding the database as of {@link snapshot}: its cost is the database's size, not the episode's length. */
  private async fresh(): Promise<Sandbox> {
    const sandbox = await Sandbox.start(this.options.memoryBytes);
    const maxPages = Math.max(1, Math.floor(this.options.maxDatabaseBytes / PAGE_BYTES));
    const state = this.snapshot ? { snapshot: this.snapshot } : { tables: this.tables };
    const opened = await sandbox.call({ op: "open", maxPages, ...state }, 60_000);
    if (opened === "timeout" || !opened.ok) throw new Error(`could not load the rollout's tables: ${opened === "timeout" ? "timed out" : opened.message}`);
    return sandbox;
  }

  async execute(sql: string): Promise<SqlResult> {
    if (!this.sandbox) throw new Error("the rollout database is closed");
    const denied = (why: string): SqlResult => ({ text: truncate(`SQLite execution error: not authorized (${why})`), kind: "error", rowCount: 0, errorClass: "denied" });
    if (Buffer.byteLength(sql) > this.options.maxStatementBytes) return denied(`statement longer than ${this.options.maxStatementBytes} bytes`);
    const text = mysqlToSqlite(sql);
    const why = inspectStatement(text, "sqlite").refusal;
    if (why) return denied(why);
    const reply = await this.sandbox.call({ op: "exec", sql: text, maxRows: this.options.maxRows }, this.options.statementMs);
    if (reply === "timeout" || (!reply.ok && reply.ended)) {
      this.sandbox.kill();
      this.sandbox = await this.fresh();
      return reply === "timeout"
        ? { text: `SQLite execution error: interrupted (the statement ran longer than ${this.options.statementMs} ms)`, kind: "error", rowCount: 0, errorClass: "timeout" }
        : { text: "SQLite execution error: out of memory (the statement needed more memory than the sandbox allows)", kind: "error", rowCount: 0, errorClass: "other" };
    }
    if (!reply.ok) return { text: truncate(`SQLite execution error: ${reply.message}`), kind: "error", rowCount: 0, errorClass: errorClass(reply.message) };
    if (reply.snapshot) this.snapshot = reply.snapshot;
    if (reply.kind === "rows") return { text: reply.text ?? "[]", kind: "rows", rowCount: reply.rowCount ?? 0, ...(reply.truncated ? { truncated: true } : {}) };
    return { text: "[]", kind: "ok", rowCount: reply.changes ?? 0 };
  }

  tablesHash(tables: readonly DbTable[]): Promise<string> {
    return tablesHash((sql) => this.execute(sql), tables);
  }

  async close(): Promise<void> {
    this.sandbox?.kill();
    this.sandbox = undefined;
    this.onClose();
  }
}
