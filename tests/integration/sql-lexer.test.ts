import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lexSql, type Dialect } from "@harness-s/dbbench";

// The guard's lexer against the servers themselves: for statements built from the fragments the
// escape suite hides keywords with (comments of every kind, `--` with and without a space,
// quotes, escapes, executable comments), the number of columns the server returns is the number
// of top-level commas the lexer sees in code, plus one. A fragment the lexer read as a comment
// while the server ran it (or the other way round) changes that count.
const SHARED = [
  "-- x\n",
  "--\n",
  "/* , 0 */",
  "/**/",
  "'a,b'",
  "'--'",
  "'/*'",
  "`c,d`",
  "+1--1",
  "- -1",
  "+ (1 IN (1, 2))",
  "'it''s'",
  "\n",
  "\t",
];
const FRAGMENTS: Record<Dialect, string[]> = {
  mysql: [
    ...SHARED,
    "--",
    "--\t, 0\n",
    "# , 0\n",
    "/*! , 3 */",
    "/*M! , 3 */",
    "/*!*/",
    "'a\\', 0'",
    '"x, y"',
    '"\\"--"',
    "---1",
    "+1 -- , 0\n",
    "-1--1, 0",
    "--\r, 0\n",
    "*/",
  ],
  sqlite: [...SHARED, "--, 0\n", "-- , 0", '"x, y"', "[e, f]", "'a\\', 0", "---1\n", "-1--1, 0\n"],
};

/** Columns the lexer sees in `SELECT …`: top-level commas in code, plus one. */
const lexedColumns = (sql: string, dialect: Dialect) =>
  lexSql(sql, dialect).tokens.filter((t) => t.kind === "punct" && t.text === "," && t.depth === 0).length + 1;
const probes = (dialect: Dialect) => {
  const f = FRAGMENTS[dialect];
  return [...f.flatMap((a) => f.map((b) => `SELECT 1 ${a}, 2 ${b}\n, 3`)), ...f.map((a) => `SELECT 1, 2 ${a}`)];
};

describe("the lexer reads statements as the servers do", () => {
  let admin: mysql.Connection;
  beforeAll(async () => {
    admin = await mysql.createConnection({
      host: "127.0.0.1",
      user: "root",
      database: "test",
      multipleStatements: false,
    });
    await admin.query("SET SESSION sql_mode = ''");
  });
  afterAll(() => admin?.end());

  it("MariaDB: the same number of columns for every pair of fragments the server accepts", async () => {
    const disagreements: string[] = [];
    let answered = 0;
    for (const sql of probes("mysql")) {
      const served = await admin.query({ sql, rowsAsArray: true }).then(
        ([, fields]) => (fields as unknown[]).length,
        () => undefined,
      );
      if (served === undefined) continue;
      answered++;
      if (served !== lexedColumns(sql, "mysql"))
        disagreements.push(`${JSON.stringify(sql)}: server ${served}, lexer ${lexedColumns(sql, "mysql")}`);
    }
    expect(disagreements).toEqual([]);
    expect(answered).toBeGreaterThan(400);
  });

  it("SQLite: the same number of columns for every pair of fragments the engine accepts", () => {
    const db = new Database(":memory:");
    const disagreements: string[] = [];
    let answered = 0;
    for (const sql of probes("sqlite")) {
      let served: number | undefined;
      try {
        served = db.prepare(sql).columns().length;
      } catch {
        continue;
      }
      answered++;
      if (served !== lexedColumns(sql, "sqlite"))
        disagreements.push(`${JSON.stringify(sql)}: engine ${served}, lexer ${lexedColumns(sql, "sqlite")}`);
    }
    db.close();
    expect(disagreements).toEqual([]);
    expect(answered).toBeGreaterThan(200);
  });
});
