import { randomBytes } from "node:crypto";
import mysql, { type Connection, type FieldPacket, type Pool, type TypeCastField } from "mysql2/promise";
import { HarnessSError } from "@harness-s/core";
import { columnNames, type DbBenchRow, type DbTable } from "../data.ts";
import { pyRows, truncate, type PyValue } from "../python.ts";
import { errorClass, tablesHash, type SqlEngine, type SqlResult, type SqlSession } from "./engine.ts";

/** The MySQL/MariaDB server could not be reached or refused the engine's own work. */
export class SqlServerError extends HarnessSError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super("SQL_SERVER_UNAVAILABLE", detail, options);
  }
}

export interface MysqlOptions {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Per-statement limit for the agent's SQL (MariaDB max_statement_time). */
  statementSeconds: number;
  /** Prefix of every rollout database and user; leftovers of dead processes are swept by it. */
  prefix: string;
}

export const defaultMysqlOptions: MysqlOptions = { host: "127.0.0.1", port: 3306, user: "root", password: "", statementSeconds: 20, prefix: "hsdb_" };

const INT_TYPES = new Set(["TINY", "SHORT", "LONG", "LONGLONG", "INT24", "YEAR"]);

/** Values with the Python types mysql-connector would return, so the text matches AgentBench's. */
function typeCast(field: TypeCastField): unknown {
  const type = field.type as string;
  const s = field.string();
  if (s === null) return null;
  if (INT_TYPES.has(type)) return { int: s } satisfies PyValue;
  if (type === "DOUBLE" || type === "FLOAT") return { float: Number(s) } satisfies PyValue;
  if (type === "DECIMAL" || type === "NEWDECIMAL") return { decimal: s } satisfies PyValue;
  if (type === "DATE" || type === "NEWDATE") {
    const [y, m, d] = s.split("-").map(Number);
    return { raw: `datetime.date(${y}, ${m}, ${d})` } satisfies PyValue;
  }
  if (type === "DATETIME" || type === "TIMESTAMP") {
    const [y, mo, d, h, mi, se] = s.split(/[- :.]/).map(Number);
    return { raw: `datetime.datetime(${[y, mo, d, h, mi, se].filter((x, i) => i < 3 || x).join(", ")})` } satisfies PyValue;
  }
  return s;
}

const quoteId = (s: string) => `\`${s.replace(/`/g, "``")}\``;

/**
 * Fresh database per rollout on a MySQL/MariaDB server, reached by a user of its own that holds
 * privileges on that database only: other databases, users, files (INTO OUTFILE, LOAD DATA) and
 * global variables are out of its reach. Both are dropped when the rollout ends; databases and
 * users left by a process that died are swept when the engine starts.
 *
 * @example
 * const engine = await MysqlEngine.start();
 * const db = await engine.open(row); await db.execute("SELECT 1"); await db.close();
 */
export class MysqlEngine implements SqlEngine {
  readonly name = "mysql" as const;
  private counter = 0;
  private readonly open_ = new Set<MysqlSession>();

  private constructor(
    private readonly admin: Pool,
    readonly options: MysqlOptions,
  ) {}

  static async start(opts: Partial<MysqlOptions> = {}): Promise<MysqlEngine> {
    const options = { ...defaultMysqlOptions, ...opts };
    const admin = mysql.createPool({ host: options.host, port: options.port, user: options.user, password: options.password, connectionLimit: 4, multipleStatements: false });
    try {
      await admin.query("SELECT 1");
    } catch (err) {
      await admin.end().catch(() => undefined);
      throw new SqlServerError(`cannot reach MySQL/MariaDB at ${options.host}:${options.port} as ${options.user} (${(err as Error).message}); is the server running?`, { cause: err });
    }
    const engine = new MysqlEngine(admin, options);
    await engine.sweep();
    return engine;
  }

  /** Rollout databases and users whose owning process is gone (a crash, a kill). */
  async sweep(): Promise<{ databases: string[]; users: string[] }> {
    const alive = (name: string) => {
      const pid = Number.parseInt(name.slice(this.options.prefix.length).split("_")[0] ?? "", 36);
      if (!Number.isFinite(pid)) return false;
      if (pid === process.pid) return [...this.open_].some((s) => s.name === name);
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const like = `${this.options.prefix.replace(/_/g, "\\_")}%`;
    const [dbs] = (await this.admin.query("SELECT schema_name AS n FROM information_schema.schemata WHERE schema_name LIKE ?", [like])) as [{ n: string }[], FieldPacket[]];
    const [users] = (await this.admin.query("SELECT user AS n, host AS h FROM mysql.user WHERE user LIKE ?", [like])) as [{ n: string; h: string }[], FieldPacket[]];
    const databases = dbs.map((d) => d.n).filter((n) => !alive(n));
    const staleUsers = users.filter((u) => !alive(u.n));
    for (const d of databases) await this.admin.query(`DROP DATABASE IF EXISTS ${quoteId(d)}`);
    for (const u of staleUsers) await this.admin.query("DROP USER IF EXISTS ?@?", [u.n, u.h]);
    return { databases, users: staleUsers.map((u) => u.n) };
  }

  /** Databases and users with the engine's prefix that exist now (for leak checks). */
  async leftovers(): Promise<{ databases: number; users: number }> {
    const like = `${this.options.prefix.replace(/_/g, "\\_")}%`;
    const [[d]] = (await this.admin.query("SELECT COUNT(*) AS c FROM information_schema.schemata WHERE schema_name LIKE ?", [like])) as [{ c: number }[], FieldPacket[]];
    const [[u]] = (await this.admin.query("SELECT COUNT(*) AS c FROM mysql.user WHERE user LIKE ?", [like])) as [{ c: number }[], FieldPacket[]];
    return { databases: Number(d!.c), users: Number(u!.c) };
  }

  async open(row: DbBenchRow): Promise<SqlSession> {
    const name = `${this.options.prefix}${process.pid.toString(36)}_${(++this.counter).toString(36)}_${randomBytes(3).toString("hex")}`;
    const password = randomBytes(12).toString("hex");
    const session: MysqlSession = new MysqlSession(name, (): Promise<void> => this.dropAll(name, session));
    this.open_.add(session);
    try {
      await this.admin.query(`CREATE DATABASE ${quoteId(name)} CHARACTER SET utf8mb4`);
      await this.admin.query("CREATE USER ?@'localhost' IDENTIFIED BY ?", [name, password]);
      await this.admin.query("CREATE USER ?@'127.0.0.1' IDENTIFIED BY ?", [name, password]);
      for (const host of ["localhost", "127.0.0.1"]) {
        await this.admin.query(
          `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, CREATE VIEW, SHOW VIEW, CREATE TEMPORARY TABLES ON ${quoteId(name)}.* TO ?@? WITH MAX_USER_CONNECTIONS 2`,
          [name, host],
        );
      }
      const conn = await mysql.createConnection({
        host: this.options.host,
        port: this.options.port,
        user: name,
        password,
        database: name,
        multipleStatements: false,
        typeCast,
        rowsAsArray: true,
        dateStrings: true,
        supportBigNumbers: true,
        bigNumberStrings: true,
      });
      await conn.query(`SET SESSION sql_mode = '', SESSION max_statement_time = ${this.options.statementSeconds}`);
      session.attach(conn);
      for (const table of row.table) await load(conn, table);
      return session;
    } catch (err) {
      await session.close();
      throw err instanceof HarnessSError ? err : new SqlServerError(`could not prepare a database for ${row.id}: ${(err as Error).message}`, { cause: err });
    }
  }

  private async dropAll(name: string, session: MysqlSession): Promise<void> {
    this.open_.delete(session);
    await this.admin.query(`DROP DATABASE IF EXISTS ${quoteId(name)}`);
    await this.admin.query("DROP USER IF EXISTS ?@'localhost', ?@'127.0.0.1'", [name, name]);
  }

  async shutdown(): Promise<void> {
    for (const s of [...this.open_]) await s.close().catch(() => undefined);
    await this.admin.end();
  }
}

/** AgentBench's load: `CREATE TABLE IF NOT EXISTS` with every column TEXT, then one INSERT. */
async function load(conn: Connection, table: DbTable): Promise<void> {
  const cols = columnNames(table).map(quoteId);
  await conn.query(`CREATE TABLE IF NOT EXISTS ${quoteId(table.table_name)} (${cols.map((c) => `${c} TEXT`).join(",")})`);
  const rows = table.table_info.rows;
  if (rows.length === 0) return;
  const values = rows.map((r) => `(${r.map(() => "?").join(",")})`).join(",");
  await conn.query(`INSERT INTO ${quoteId(table.table_name)} (${cols.join(",")}) VALUES ${values}`, rows.flat());
}

class MysqlSession implements SqlSession {
  readonly engine = "mysql" as const;
  private conn?: Connection;
  private closed?: Promise<void>;

  constructor(
    readonly name: string,
    private readonly drop: () => Promise<void>,
  ) {}

  attach(conn: Connection) {
    this.conn = conn;
  }

  async execute(sql: string): Promise<SqlResult> {
    if (!this.conn) throw new SqlServerError("the rollout database is closed");
    try {
      const [rows] = await this.conn.query({ sql, rowsAsArray: true });
      if (Array.isArray(rows)) return { text: truncate(pyRows(rows as PyValue[][])), kind: "rows", rowCount: rows.length };
      return { text: "[]", kind: "ok", rowCount: (rows as { affectedRows?: number }).affectedRows ?? 0 };
    } catch (err) {
      const e = err as { errno?: number; sqlState?: string; message: string; fatal?: boolean };
      if (e.fatal || e.errno === undefined) throw new SqlServerError(`the rollout's connection failed: ${e.message}`, { cause: err });
      const text = truncate(`${e.errno} (${e.sqlState ?? "HY000"}): ${e.message}`);
      return { text, kind: "error", rowCount: 0, errorClass: errorClass(e.message) };
    }
  }

  tablesHash(tables: readonly DbTable[]): Promise<string> {
    return tablesHash((sql) => this.execute(sql), tables);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.conn?.end().catch(() => this.conn?.destroy());
      this.conn = undefined;
      await this.drop();
    })();
    return this.closed;
  }
}
