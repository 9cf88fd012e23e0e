import { columnNames, type DbBenchRow, type DbTable } from "../data.ts";

/** What one statement did, as the agent sees it (AgentBench's text) and as the harness classifies it. */
export interface SqlResult {
  /** `str(cursor.fetchall())`, or the error's text, cut at 800 characters. */
  text: string;
  kind: "rows" | "ok" | "error";
  rowCount: number;
  /** A short error class for harness triggers: syntax, unknown-table, unknown-column, denied, timeout, other. */
  errorClass?: string;
  /** The result had more rows than the engine reads (its row cap); `rowCount` is the cap. */
  truncated?: boolean;
}

/** One rollout's private database, loaded with the row's tables (every column TEXT). */
export interface SqlSession {
  readonly engine: "mysql" | "sqlite";
  execute(sql: string): Promise<SqlResult>;
  /** AgentBench's table hash (md5 of the ordered 5-hex-char row hashes), sorted and joined by "_". */
  tablesHash(tables: readonly DbTable[]): Promise<string>;
  /** Drops the database (and its user); safe to call twice. */
  close(): Promise<void>;
}

export interface SqlEngine {
  readonly name: "mysql" | "sqlite";
  open(row: DbBenchRow): Promise<SqlSession>;
  /** Releases the engine's own connections. */
  shutdown(): Promise<void>;
  /**
   * Creates and drops one empty database the plainest way this server allows (the bench's baseline for a rollout's
   * setup and teardown).
   */
  emptyDatabaseCycle(): Promise<void>;
}

/** The per-row MD5 query AgentBench uses to grade mutations. */
export function hashQuery(table: DbTable): string {
  const columns = columnNames(table)
    .map((c) => `\`${c}\``)
    .join(",");
  return `select md5(group_concat(rowhash order by rowhash)) as hash from( SELECT substring(MD5(CONCAT_WS(',', ${columns})), 1, 5) AS rowhash FROM \`${table.table_name}\`) as sub;`;
}

/** Classifies a server error message for harness triggers (explained SQL errors). */
export function errorClass(message: string): string {
  const m = message.toLowerCase();
  if (m.includes("syntax")) return "syntax";
  if (m.includes("doesn't exist") || m.includes("no such table")) return "unknown-table";
  if (m.includes("unknown column") || m.includes("no such column") || m.includes("has no column"))
    return "unknown-column";
  if (m.includes("denied") || m.includes("not authorized") || m.includes("not allowed")) return "denied";
  if (m.includes("timed out") || m.includes("max_statement_time") || m.includes("interrupted")) return "timeout";
  return "other";
}

/**
 * AgentBench's combined hash: each table's hash read from the query's printed result
 * (`[('<md5>',)]`), sorted and joined by "_".
 */
export async function tablesHash(
  execute: (sql: string) => Promise<SqlResult>,
  tables: readonly DbTable[],
): Promise<string> {
  const hashes: string[] = [];
  for (const t of tables) {
    const r = await execute(hashQuery(t));
    hashes.push(
      r.text
        .replace(/^[[\]()]+|[[\]()]+$/g, "")
        .split(",")[0]!
        .trim()
        .replace(/^'+|'+$/g, ""),
    );
  }
  return hashes.sort().join("_");
}
