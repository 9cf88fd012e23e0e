import type { Connection } from "mysql2/promise";
import type { Connection as CoreConnection } from "mysql2";
import { SqlServerError } from "../errors.ts";
import type { DbTable } from "../data.ts";
import { RowsText, truncate, type PyValue } from "../python.ts";
import { errorClass, tablesHash, type SqlResult, type SqlSession } from "./engine.ts";
import { inspectStatement } from "./statement-guard.ts";

const FREES_SPACE = new Set(["DROP", "DELETE", "TRUNCATE"]);

export interface SessionLimits {
  statementSeconds: number;
  maxRows: number;
  maxDatabaseBytes: number;
  maxStatementBytes: number;
}

/** What a session asks of its engine's own (admin) connection. */
export interface SessionControl {
  kill(threadId: number): Promise<void>;
  sizeOf(): Promise<number>;
  /** Drops every table of the database whose engine is not InnoDB; answers their names. */
  dropUncounted(): Promise<string[]>;
  drop(): Promise<void>;
}

type Outcome =
  | { rows: RowsText; truncated: boolean }
  | { affected: number }
  | { error: { errno?: number; sqlState?: string; message: string; fatal?: boolean } };

const CHANGES_STORAGE = new Set(["CREATE", "ALTER"]);

/** How often a write's database size is checked while it runs. */
const SIZE_CHECK_MS = 50;

/** One rollout's connection to its own database, with the limits of {@link MysqlEngine}. */
export class MysqlSession implements SqlSession {
  readonly engine = "mysql" as const;
  private conn?: Connection;
  private closed?: Promise<void>;
  /** A write left the database over its size limit: only statements that free space run until it is back under. */
  private full = false;

  constructor(
    readonly name: string,
    private readonly limits: SessionLimits,
    private readonly connect: () => Promise<Connection>,
    private readonly control: SessionControl,
  ) {}

  attach(conn: Connection) {
    this.conn = conn;
  }

  async execute(sql: string): Promise<SqlResult> {
    if (!this.conn) throw new SqlServerError("the rollout database is closed");
    const refuse = (why: string, errno = 1142): SqlResult => ({
      text: truncate(`${errno} (42000): ${why}`),
      kind: "error",
      rowCount: 0,
      errorClass: "denied",
    });
    if (Buffer.byteLength(sql) > this.limits.maxStatementBytes)
      return refuse(`statement longer than ${this.limits.maxStatementBytes} bytes`, 1153);
    const statement = inspectStatement(sql, "mysql");
    if (statement.refusal) return refuse(statement.refusal);
    const writes = !statement.reads;
    if (writes && this.full && !FREES_SPACE.has(statement.first ?? "")) {
      if ((await this.control.sizeOf()) > this.limits.maxDatabaseBytes)
        return {
          ...refuse(
            `The rollout database is over its limit of ${this.limits.maxDatabaseBytes} bytes; drop or empty tables first`,
            1114,
          ),
          errorClass: "other",
        };
      this.full = false;
    }
    const outcome = await this.run(this.conn, sql, writes);
    if (!("error" in outcome) && CHANGES_STORAGE.has(statement.first ?? "")) {
      const dropped = await this.control.dropUncounted();
      if (dropped.length)
        return {
          ...refuse(
            `only InnoDB tables are allowed in a rollout database; dropped ${dropped.join(", ")} (their storage is not counted)`,
            1286,
          ),
          errorClass: "other",
        };
    }
    if ("error" in outcome) {
      const e = outcome.error;
      if (e.fatal || e.errno === undefined) {
        // The server dropped the connection (or it broke): the database is still there, so the
        // episode goes on over a new one; this statement reports the failure.
        this.conn.destroy();
        this.conn = await this.connect().catch((err) => {
          throw new SqlServerError(
            `the rollout's connection failed and could not be reopened: ${(err as Error).message}`,
            { cause: err },
          );
        });
        return {
          text: truncate(`2013 (HY000): Lost connection to server during query (${e.message})`),
          kind: "error",
          rowCount: 0,
          errorClass: "other",
        };
      }
      return {
        text: truncate(`${e.errno} (${e.sqlState ?? "HY000"}): ${e.message}`),
        kind: "error",
        rowCount: 0,
        errorClass: errorClass(e.message),
      };
    }
    if ("rows" in outcome)
      return {
        text: outcome.rows.text(),
        kind: "rows",
        rowCount: outcome.rows.rows,
        ...(outcome.truncated ? { truncated: true } : {}),
      };
    return { text: "[]", kind: "ok", rowCount: outcome.affected };
  }

  /**
   * Streams one statement's result into the text the agent sees ({@link RowsText}): once that is
   * full, or at `maxRows` rows, a read is killed and later rows are dropped as they arrive
   * (a write runs to its end, its rows unread). A watchdog kills the statement after the time
   * limit, counted until the last row has arrived (whatever the session's own
   * max_statement_time says), and, for a write, when the database passes its size limit.
   */
  private run(conn: Connection, sql: string, writes: boolean): Promise<Outcome> {
    const core = (conn as unknown as { connection: CoreConnection }).connection;
    const threadId = conn.threadId!;
    return new Promise<Outcome>((resolve) => {
      const rows = new RowsText(undefined, this.limits.maxRows);
      let truncated = false;
      let reason: "time" | "size" | "rows" | undefined;
      let affected = 0;
      let error: Outcome | undefined;
      // A size check still in flight when the statement ends must not kill the next statement on
      // this connection, and a kill sent before the end must have landed before the next one starts.
      let ended = false;
      let killing: Promise<unknown> = Promise.resolve();
      const kill = (why: "time" | "size" | "rows") => {
        if (reason || ended) return;
        reason = why;
        killing = this.control.kill(threadId).catch(() => undefined);
      };
      const timer = setTimeout(() => kill("time"), this.limits.statementSeconds * 1000 + 500);
      const sizer = writes
        ? setInterval(() => {
            void this.control.sizeOf().then(
              (b) => (b > this.limits.maxDatabaseBytes ? kill("size") : undefined),
              () => undefined,
            );
          }, SIZE_CHECK_MS)
        : undefined;
      let resultSet = false;
      const query = core.query({ sql, rowsAsArray: true });
      query.on("fields", (fields: unknown) => {
        if (Array.isArray(fields)) resultSet = true;
      });
      query.on("result", (row: unknown) => {
        if (!Array.isArray(row)) {
          affected += (row as { affectedRows?: number }).affectedRows ?? 0;
          return;
        }
        if (truncated) return;
        if (!rows.push(row as PyValue[])) {
          truncated = true;
          if (!writes) kill("rows");
        }
      });
      query.on("error", (err: Error & { errno?: number; sqlState?: string; fatal?: boolean }) => {
        error = { error: { errno: err.errno, sqlState: err.sqlState, message: err.message, fatal: err.fatal } };
      });
      query.on("end", async () => {
        ended = true;
        clearTimeout(timer);
        if (sizer) clearInterval(sizer);
        await killing;
        if (reason === "rows") return resolve({ rows, truncated: true });
        if (reason === "time" || reason === "size") return resolve(this.interrupted(reason));
        if (error) return resolve(error);
        if (writes && (await this.control.sizeOf().catch(() => 0)) > this.limits.maxDatabaseBytes) {
          this.full = true;
          return resolve({
            error: {
              errno: 1114,
              sqlState: "HY000",
              message: `The rollout database is over its limit of ${this.limits.maxDatabaseBytes} bytes; drop or empty tables`,
            },
          });
        }
        resolve(resultSet ? { rows, truncated } : { affected });
      });
    });
  }

  /** The error of a statement the watchdog stopped: past the time limit, or with the database past its size limit. */
  private interrupted(reason: "time" | "size"): Outcome {
    return reason === "time"
      ? {
          error: {
            errno: 1969,
            sqlState: "70100",
            message: `Query execution was interrupted (max_statement_time exceeded: ${this.limits.statementSeconds} s)`,
          },
        }
      : {
          error: {
            errno: 1114,
            sqlState: "HY000",
            message: `The rollout database is full (its limit is ${this.limits.maxDatabaseBytes} bytes); the statement was stopped`,
          },
        };
  }

  tablesHash(tables: readonly DbTable[]): Promise<string> {
    return tablesHash((sql) => this.execute(sql), tables);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.conn?.end().catch(() => this.conn?.destroy());
      this.conn = undefined;
      await this.control.drop();
    })();
    return this.closed;
  }
}
