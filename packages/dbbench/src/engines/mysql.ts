import { randomBytes } from "node:crypto";
import type { Connection, FieldPacket, Pool, TypeCastField } from "mysql2/promise";

/** The MySQL client, loaded when an engine first connects (its ~90 modules stay unloaded in a process that never does). */
const mysqlClient = async () => (await import("mysql2/promise")).default;
import { HarnessSError } from "@harness-s/core";
import { columnNames, type DbBenchRow, type DbTable } from "../data.ts";
import type { PyValue } from "../python.ts";
import type { SqlEngine, SqlSession } from "./engine.ts";
import { MysqlSession } from "./mysql-session.ts";
import { SqlServerError } from "../errors.ts";

export { SqlServerError };

export interface MysqlOptions {
  host: string;
  port: number;
  user: string;
  password: string;
  /**
   * Per-statement limit for the agent's SQL: the server's max_statement_time, and a watchdog that
   * kills the query from the engine's own connection shortly after (so a session that lifted
   * its limit is stopped all the same).
   */
  statementSeconds: number;
  /** Prefix of every rollout database and user; leftovers of dead owners are swept by it. */
  prefix: string;
  /** Rows read from one result at most; the rest is never buffered (the query is killed). */
  maxRows: number;
  /** Largest a rollout database may grow (bytes on disk); a write that passes it is killed. */
  maxDatabaseBytes: number;
  /** Longest statement text accepted (bytes), far below the server's max_allowed_packet. */
  maxStatementBytes: number;
}

export const defaultMysqlOptions: MysqlOptions = {
  host: "127.0.0.1",
  port: 3306,
  user: "root",
  password: "",
  statementSeconds: 20,
  prefix: "hsdb_",
  maxRows: 10_000,
  maxDatabaseBytes: 64 * 1024 * 1024,
  maxStatementBytes: 1 << 20,
};

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
    return {
      raw: `datetime.datetime(${[y, mo, d, h, mi, se].filter((x, i) => i < 3 || x).join(", ")})`,
    } satisfies PyValue;
  }
  return s;
}

const quoteId = (s: string) => `\`${s.replace(/`/g, "``")}\``;

/** Every live engine of this process by owner id: a second engine never sweeps the first one's databases. */
const LIVE_OWNERS = new Set<string>();
const OWNER_NAME = /^o([0-9a-f]{10})_/;

/**
 * Fresh database per rollout on a MySQL/MariaDB server, reached by a user of its own that holds
 * privileges on that database only: other databases, users, files (INTO OUTFILE, LOAD DATA) and
 * global variables are out of its reach. Statements pass {@link inspectStatement} first (no SET, no
 * prepared or compound statements, however they are commented); each is stopped after
 * `statementSeconds`, is read only as far as the agent can see it (800 characters, at most
 * `maxRows` rows) and may not grow the database past `maxDatabaseBytes`. Only storage that size
 * counts is offered: no temporary tables (not granted, and refused), InnoDB tables only (others
 * refused, and dropped if one slips through). Both are dropped when the rollout ends. Names carry the engine's owner
 * id,
 * and the engine holds a server lock named after it for its lifetime: databases and users whose
 * owner's lock is free (their process died, on any host sharing the server) are swept when an
 * engine starts, and nothing a live engine owns ever is.
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
    private readonly ownerLock: Connection,
    readonly ownerId: string,
    readonly options: MysqlOptions,
  ) {}

  static async start(opts: Partial<MysqlOptions> = {}): Promise<MysqlEngine> {
    const options = { ...defaultMysqlOptions, ...opts };
    const server = { host: options.host, port: options.port, user: options.user, password: options.password };
    const mysql = await mysqlClient();
    const admin = mysql.createPool({ ...server, connectionLimit: 4, multipleStatements: false });
    let lock: Connection | undefined;
    try {
      await admin.query("SELECT 1");
      lock = await mysql.createConnection(server);
    } catch (err) {
      await admin.end().catch(() => undefined);
      throw new SqlServerError(
        `cannot reach MySQL/MariaDB at ${options.host}:${options.port} as ${options.user} (${(err as Error).message}); is the server running?`,
        {
          cause: err,
        },
      );
    }
    const ownerId = randomBytes(5).toString("hex");
    const [[held]] = (await lock.query("SELECT GET_LOCK(?, 0) AS ok", [ownerLockName(options.prefix, ownerId)])) as [
      { ok: number }[],
      FieldPacket[],
    ];
    if (Number(held!.ok) !== 1)
      throw new SqlServerError(`could not take the engine's owner lock ${ownerLockName(options.prefix, ownerId)}`);
    LIVE_OWNERS.add(ownerId);
    const engine = new MysqlEngine(admin, lock, ownerId, options);
    await engine.sweep();
    return engine;
  }

  async emptyDatabaseCycle(): Promise<void> {
    const name = `${this.options.prefix}o${this.ownerId}_empty${++this.counter}`;
    await this.admin.query(`CREATE DATABASE ${quoteId(name)}`);
    await this.admin.query(`DROP DATABASE ${quoteId(name)}`);
  }

  /** Rollout databases and users whose owner is gone (a crash, a kill), on this host or another. */
  async sweep(): Promise<{ databases: string[]; users: string[] }> {
    const verdicts = new Map<string, Promise<boolean>>();
    const dead = (name: string): Promise<boolean> => {
      const rest = name.slice(this.options.prefix.length);
      const owner = OWNER_NAME.exec(rest)?.[1];
      if (owner === undefined) return Promise.resolve(legacyOwnerDead(rest));
      if (LIVE_OWNERS.has(owner)) return Promise.resolve(false);
      if (!verdicts.has(owner)) {
        verdicts.set(
          owner,
          this.admin
            .query("SELECT IS_FREE_LOCK(?) AS free", [ownerLockName(this.options.prefix, owner)])
            .then(([rows]) => Number((rows as { free: number }[])[0]?.free) === 1),
        );
      }
      return verdicts.get(owner)!;
    };
    const like = `${this.options.prefix.replace(/_/g, "\\_")}%`;
    const [dbs] = (await this.admin.query(
      "SELECT schema_name AS n FROM information_schema.schemata WHERE schema_name LIKE ?",
      [like],
    )) as [{ n: string }[], FieldPacket[]];
    const [users] = (await this.admin.query("SELECT user AS n, host AS h FROM mysql.user WHERE user LIKE ?", [
      like,
    ])) as [{ n: string; h: string }[], FieldPacket[]];
    const databases: string[] = [];
    for (const d of dbs) if (await dead(d.n)) databases.push(d.n);
    const staleUsers: { n: string; h: string }[] = [];
    for (const u of users) if (await dead(u.n)) staleUsers.push(u);
    for (const d of databases) await this.admin.query(`DROP DATABASE IF EXISTS ${quoteId(d)}`);
    for (const u of staleUsers) await this.admin.query("DROP USER IF EXISTS ?@?", [u.n, u.h]);
    return { databases, users: staleUsers.map((u) => u.n) };
  }

  /** Databases and users with the engine's prefix that exist now (for leak checks). */
  async leftovers(): Promise<{ databases: number; users: number }> {
    const like = `${this.options.prefix.replace(/_/g, "\\_")}%`;
    const [[d]] = (await this.admin.query(
      "SELECT COUNT(*) AS c FROM information_schema.schemata WHERE schema_name LIKE ?",
      [like],
    )) as [{ c: number }[], FieldPacket[]];
    const [[u]] = (await this.admin.query("SELECT COUNT(*) AS c FROM mysql.user WHERE user LIKE ?", [like])) as [
      { c: number }[],
      FieldPacket[],
    ];
    return { databases: Number(d!.c), users: Number(u!.c) };
  }

  async open(row: DbBenchRow): Promise<SqlSession> {
    const name = `${this.options.prefix}o${this.ownerId}_${(++this.counter).toString(36)}`;
    const password = randomBytes(12).toString("hex");
    const connect = async () => {
      const conn = await (await mysqlClient()).createConnection({
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
      await conn.query(
        `SET SESSION sql_mode = '', SESSION max_statement_time = ${this.options.statementSeconds}, SESSION default_storage_engine = InnoDB`,
      );
      return conn;
    };
    const session: MysqlSession = new MysqlSession(name, this.options, connect, {
      kill: (threadId) => this.admin.query(`KILL QUERY ${Number(threadId)}`).then(() => undefined),
      sizeOf: () => this.databaseBytes(name),
      dropUncounted: () => this.dropUncounted(name),
      drop: () => this.dropAll(name, session),
    });
    this.open_.add(session);
    try {
      await this.admin.query(`CREATE DATABASE ${quoteId(name)} CHARACTER SET utf8mb4`);
      await this.admin.query("CREATE USER ?@'localhost' IDENTIFIED BY ?", [name, password]);
      await this.admin.query("CREATE USER ?@'127.0.0.1' IDENTIFIED BY ?", [name, password]);
      for (const host of ["localhost", "127.0.0.1"]) {
        await this.admin.query(
          `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, CREATE VIEW, SHOW VIEW ON ${quoteId(name)}.* TO ?@? WITH MAX_USER_CONNECTIONS 2 MAX_STATEMENT_TIME ${this.options.statementSeconds}`,
          [name, host],
        );
      }
      const conn = await connect();
      session.attach(conn);
      for (const table of row.table) await load(conn, table);
      return session;
    } catch (err) {
      await session.close();
      throw err instanceof HarnessSError
        ? err
        : new SqlServerError(`could not prepare a database for ${row.id}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Bytes on disk of one rollout database: InnoDB tablespace files, plus other engines' data. */
  private async databaseBytes(name: string): Promise<number> {
    const [[innodb]] = (await this.admin.query(
      "SELECT COALESCE(SUM(FILE_SIZE), 0) AS b FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE ?",
      [`${name}/%`],
    )) as [{ b: number }[], FieldPacket[]];
    const [[other]] = (await this.admin.query(
      "SELECT COALESCE(SUM(data_length + index_length), 0) AS b FROM information_schema.tables WHERE table_schema = ? AND engine <> 'InnoDB'",
      [name],
    )) as [{ b: number }[], FieldPacket[]];
    return Number(innodb!.b) + Number(other!.b);
  }

  /** Tables of the rollout database in an engine whose storage {@link databaseBytes} cannot count, dropped. */
  private async dropUncounted(name: string): Promise<string[]> {
    const [rows] = (await this.admin.query(
      "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = ? AND engine IS NOT NULL AND engine <> 'InnoDB'",
      [name],
    )) as [{ t: string }[], FieldPacket[]];
    for (const { t } of rows) await this.admin.query(`DROP TABLE IF EXISTS ${quoteId(name)}.${quoteId(t)}`);
    return rows.map((r) => r.t);
  }

  private async dropAll(name: string, session: MysqlSession): Promise<void> {
    this.open_.delete(session);
    await this.admin.query(`DROP DATABASE IF EXISTS ${quoteId(name)}`);
    await this.admin.query("DROP USER IF EXISTS ?@'localhost', ?@'127.0.0.1'", [name, name]);
  }

  async shutdown(): Promise<void> {
    for (const s of [...this.open_]) await s.close().catch(() => undefined);
    LIVE_OWNERS.delete(this.ownerId);
    await this.ownerLock.end().catch(() => this.ownerLock.destroy());
    await this.admin.end();
  }
}

const ownerLockName = (prefix: string, ownerId: string) => `${prefix}owner_${ownerId}`;

/** Names from before owner ids (`<prefix><pid base 36>_…`): swept only when that pid is gone here. */
function legacyOwnerDead(rest: string): boolean {
  const pid = Number.parseInt(rest.split("_")[0] ?? "", 36);
  if (!Number.isFinite(pid) || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

/** AgentBench's load: `CREATE TABLE IF NOT EXISTS` with every column TEXT, then one INSERT. */
async function load(conn: Connection, table: DbTable): Promise<void> {
  const cols = columnNames(table).map(quoteId);
  await conn.query(
    `CREATE TABLE IF NOT EXISTS ${quoteId(table.table_name)} (${cols.map((c) => `${c} TEXT`).join(",")})`,
  );
  const rows = table.table_info.rows;
  if (rows.length === 0) return;
  const values = rows.map((r) => `(${r.map(() => "?").join(",")})`).join(",");
  await conn.query(`INSERT INTO ${quoteId(table.table_name)} (${cols.join(",")}) VALUES ${values}`, rows.flat());
}
