import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import { columnNames, type DbBenchRow, type DbTable } from "../data.ts";
import { pyRows, truncate, type PyValue } from "../python.ts";
import { mysqlToSqlite } from "./mysql-dialect.ts";
import { errorClass, tablesHash, type SqlEngine, type SqlResult, type SqlSession } from "./engine.ts";

/** Statements that would reach outside the in-memory database (files, other databases, settings). */
const OUTSIDE = /^\s*(attach|detach|vacuum|pragma)\b/i;

const quoteId = (s: string) => `\`${s.replace(/`/g, "``")}\``;

/**
 * Embedded SQLite (better-sqlite3): one in-memory database per rollout, no server. MySQL's
 * MD5 is registered so the table hash is AgentBench's query verbatim; TEXT columns use NOCASE
 * to approximate MySQL's case-insensitive collation; MySQL's lexical differences (double-quoted
 * strings, backslash escapes, identifiers starting with a digit) are rewritten first
 * ({@link mysqlToSqlite}). Known remaining differences (see the README): accent-insensitive
 * comparison, SUM/AVG over integers returning integers, MySQL-only functions and syntax.
 *
 * @example
 * const engine = new SqliteEngine();
 * const db = await engine.open(row);
 */
export class SqliteEngine implements SqlEngine {
  readonly name = "sqlite" as const;

  async open(row: DbBenchRow): Promise<SqlSession> {
    const db = new Database(":memory:");
    db.function("md5", { deterministic: true }, (s: unknown) => (s === null ? null : createHash("md5").update(String(s)).digest("hex")));
    for (const table of row.table) load(db, table);
    return new SqliteSession(db);
  }

  async shutdown(): Promise<void> {}
}

function load(db: Database.Database, table: DbTable): void {
  const cols = columnNames(table).map(quoteId);
  db.exec(`CREATE TABLE IF NOT EXISTS ${quoteId(table.table_name)} (${cols.map((c) => `${c} TEXT COLLATE NOCASE`).join(",")})`);
  const insert = db.prepare(`INSERT INTO ${quoteId(table.table_name)} (${cols.join(",")}) VALUES (${cols.map(() => "?").join(",")})`);
  db.transaction(() => {
    for (const r of table.table_info.rows) insert.run(...r);
  })();
}

const toPy = (v: unknown): PyValue => {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return { int: v.toString() };
  if (typeof v === "number") return { float: v };
  if (Buffer.isBuffer(v)) return { raw: `b'${v.toString("latin1")}'` };
  return String(v);
};

class SqliteSession implements SqlSession {
  readonly engine = "sqlite" as const;

  constructor(private db: Database.Database | undefined) {}

  async execute(sql: string): Promise<SqlResult> {
    if (!this.db) throw new Error("the rollout database is closed");
    if (OUTSIDE.test(sql)) return { text: "SQLite execution error: not authorized", kind: "error", rowCount: 0, errorClass: "denied" };
    try {
      const stmt = this.db.prepare(mysqlToSqlite(sql)).safeIntegers(true);
      if (stmt.reader) {
        const rows = (stmt.raw(true).all() as unknown[][]).map((r) => r.map(toPy));
        return { text: truncate(pyRows(rows)), kind: "rows", rowCount: rows.length };
      }
      const info = stmt.run();
      return { text: "[]", kind: "ok", rowCount: Number(info.changes) };
    } catch (err) {
      const message = (err as Error).message;
      return { text: truncate(`SQLite execution error: ${message}`), kind: "error", rowCount: 0, errorClass: errorClass(message) };
    }
  }

  tablesHash(tables: readonly DbTable[]): Promise<string> {
    return tablesHash((sql) => this.execute(sql), tables);
  }

  async close(): Promise<void> {
    this.db?.close();
    this.db = undefined;
  }
}
