import { columnNames, type DbBenchRow, type DbTable } from "../data.ts";
import { truncate } from "../python.ts";
import { mysqlToSqlite } from "./mysql-dialect.ts";
import { errorClass, tablesHash, type SqlEngine, type SqlResult, type SqlSession } from "./engine.ts";
import { SandboxPool, type Sandbox, type SandboxReuse } from "./sqlite-sandboxes.ts";
import { inspectStatement } from "./statement-guard.ts";

export interface SqliteOptions {
  /**
   * Longest one statement may run, its rows' transfer included; then its process is killed and the database restored as
   * it was before it.
   */
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
  /**
   * Sandbox processes are reused: each serves one rollout at a time, with a fresh in-memory
   * database, for up to `rolloutsPerProcess` rollouts; one whose statement timed out or crashed
   * is never reused (see {@link SandboxPool}).
   */
  sandboxes: SandboxReuse;
}

export const defaultSqliteOptions: SqliteOptions = {
  statementMs: 5_000,
  maxRows: 10_000,
  maxStatementBytes: 1 << 20,
  maxDatabaseBytes: 16 * 1024 * 1024,
  memoryBytes: 320 * 1024 * 1024,
  sandboxes: { rolloutsPerProcess: 64, maxIdle: 8 },
};

const PAGE_BYTES = 4096;

/**
 * Embedded SQLite (better-sqlite3): one in-memory database per rollout, in a sandbox process
 * serving that rollout alone while it lasts (processes are reused, each with a fresh database:
 * `options.sandboxes`). A statement runs only if {@link inspectStatement} allows it (no ATTACH, VACUUM, PRAGMA or
 * extension, temporary table, however it is commented, cased or spaced), at most `statementMs`
 * long with its rows' transfer (then the process is killed and the database restored from the
 * snapshot taken after the last statement that may have written: no write is lost or re-run), read
 * only as far as the agent sees it (800 characters, at most `maxRows` rows), in a database of at
 * most `maxDatabaseBytes` and a process of at most `memoryBytes`. MySQL's MD5 is registered so the table hash is
 * AgentBench's
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
  /** Sandbox processes, handed to one rollout at a time. */
  readonly sandboxes: SandboxPool;

  constructor(options: Partial<SqliteOptions> = {}) {
    this.options = { ...defaultSqliteOptions, ...options };
    this.sandboxes = new SandboxPool(this.options.memoryBytes, this.options.sandboxes);
  }

  async open(row: DbBenchRow): Promise<SqlSession> {
    const tables = row.table.map((t: DbTable) => ({
      name: t.table_name,
      columns: columnNames(t),
      rows: t.table_info.rows,
    }));
    const session = await SqliteSession.start(tables, this.options, this.sandboxes, () =>
      this.sessions.delete(session),
    );
    this.sessions.add(session);
    return session;
  }

  async shutdown(): Promise<void> {
    for (const s of [...this.sessions]) await s.close();
    this.sandboxes.shutdown();
  }

  /** An empty database in a sandbox of its own (each rollout's isolation here), opened and closed. */
  async emptyDatabaseCycle(): Promise<void> {
    const session = await SqliteSession.start([], this.options, this.sandboxes, () => undefined);
    await session.close();
  }
}

type Tables = { name: string; columns: string[]; rows: unknown[][] }[];

class SqliteSession implements SqlSession {
  readonly engine = "sqlite" as const;
  /**
   * The database as the last statement that may have written left it; restored after a timeout or a crash (none yet:
   * the tables as loaded).
   */
  private snapshot?: Uint8Array;

  private constructor(
    private sandbox: Sandbox | undefined,
    private readonly tables: Tables,
    private readonly options: SqliteOptions,
    private readonly pool: SandboxPool,
    private readonly onClose: () => void,
  ) {}

  static async start(
    tables: Tables,
    options: SqliteOptions,
    pool: SandboxPool,
    onClose: () => void,
  ): Promise<SqliteSession> {
    const session = new SqliteSession(undefined, tables, options, pool, onClose);
    session.sandbox = await session.fresh();
    return session;
  }

  /**
   * A sandbox holding a new database as of {@link snapshot}: its cost is the database's size, not the episode's length.
   */
  private async fresh(): Promise<Sandbox> {
    const sandbox = await this.pool.take();
    const maxPages = Math.max(1, Math.floor(this.options.maxDatabaseBytes / PAGE_BYTES));
    const state = this.snapshot ? { snapshot: this.snapshot } : { tables: this.tables };
    const opened = await sandbox.call({ op: "open", maxPages, ...state }, 60_000);
    if (opened === "timeout" || !opened.ok) {
      sandbox.kill();
      throw new Error(`could not load the rollout's tables: ${opened === "timeout" ? "timed out" : opened.message}`);
    }
    return sandbox;
  }

  async execute(sql: string): Promise<SqlResult> {
    if (!this.sandbox) throw new Error("the rollout database is closed");
    const denied = (why: string): SqlResult => ({
      text: truncate(`SQLite execution error: not authorized (${why})`),
      kind: "error",
      rowCount: 0,
      errorClass: "denied",
    });
    if (Buffer.byteLength(sql) > this.options.maxStatementBytes)
      return denied(`statement longer than ${this.options.maxStatementBytes} bytes`);
    const text = mysqlToSqlite(sql);
    const why = inspectStatement(text, "sqlite").refusal;
    if (why) return denied(why);
    const reply = await this.sandbox.call(
      { op: "exec", sql: text, maxRows: this.options.maxRows },
      this.options.statementMs,
    );
    if (reply === "timeout" || (!reply.ok && reply.ended)) {
      this.sandbox.kill();
      this.sandbox = await this.fresh();
      return reply === "timeout"
        ? {
            text: `SQLite execution error: interrupted (the statement ran longer than ${this.options.statementMs} ms)`,
            kind: "error",
            rowCount: 0,
            errorClass: "timeout",
          }
        : {
            text: "SQLite execution error: out of memory (the statement needed more memory than the sandbox allows)",
            kind: "error",
            rowCount: 0,
            errorClass: "other",
          };
    }
    if (!reply.ok)
      return {
        text: truncate(`SQLite execution error: ${reply.message}`),
        kind: "error",
        rowCount: 0,
        errorClass: errorClass(reply.message),
      };
    if (reply.snapshot) this.snapshot = reply.snapshot;
    if (reply.kind === "rows")
      return {
        text: reply.text ?? "[]",
        kind: "rows",
        rowCount: reply.rowCount ?? 0,
        ...(reply.truncated ? { truncated: true } : {}),
      };
    return { text: "[]", kind: "ok", rowCount: reply.changes ?? 0 };
  }

  tablesHash(tables: readonly DbTable[]): Promise<string> {
    return tablesHash((sql) => this.execute(sql), tables);
  }

  async close(): Promise<void> {
    const sandbox = this.sandbox;
    this.sandbox = undefined;
    this.onClose();
    if (sandbox) await this.pool.give(sandbox);
  }
}
