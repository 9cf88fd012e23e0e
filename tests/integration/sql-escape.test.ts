import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BUNDLED_DATA_DIR,
  MysqlEngine,
  SqliteEngine,
  loadSplit,
  type DbBenchRow,
  type SqlSession,
} from "@harness-s/dbbench";

// An agent inside a DBBench rollout trying to leave its database, lift its limits or exhaust
// the host. "Succeeds" means the statement ran without an error; every one of these must fail.
const files = ["x.db", "hs_escape.db", "/tmp/hs_escape_out.txt"];
const comments = (sql: string) => [
  sql,
  `/* x */ ${sql}`,
  `--\n${sql}`,
  `  \n\t${sql.toLowerCase()}`,
  `/**/${sql.toUpperCase()}`,
  `-- a\n/* b */\n ${sql}`,
];
const sqliteEscapes = [
  ...comments("ATTACH DATABASE 'x.db' AS a"),
  ...comments("ATTACH 'hs_escape.db' AS b"),
  ...comments("VACUUM INTO 'x.db'"),
  ...comments("PRAGMA writable_schema = 1"),
  ...comments("PRAGMA journal_mode = WAL"),
  "SELECT 1; ATTACH 'x.db' AS c",
  "WITH a AS (SELECT 1) SELECT * FROM a; VACUUM INTO 'x.db'",
  "SELECT load_extension('/tmp/hs_escape')",
  "CREATE VIRTUAL TABLE v USING fts5(a)",
  "DETACH DATABASE main",
  "pragma\tjournal_mode=delete",
  // Issue 30, item 11: the temp schema by a quoted name (its storage is outside the database's cap).
  ...['"temp"', "[temp]", "`temp`", '"TEMP"', "'temp'", '"tEmP"', "temp "].map(
    (q, i) => `CREATE TABLE ${q}.t_${i} AS SELECT randomblob(1000) AS a`,
  ),
  'CREATE VIEW "temp".v2 AS SELECT 1',
  // Issue 30, item 12's class in SQLite: a quoted function name is the function.
  `SELECT "load_extension"('/tmp/hs_escape')`,
];
const mysqlEscapes = [
  ...comments("SET SESSION max_statement_time = 0"),
  "/*!40000 SET max_statement_time=0 */",
  "/*M!100000 SET SESSION max_statement_time=0 */",
  "SET STATEMENT max_statement_time=0 FOR SELECT SLEEP(30)",
  "set @@session.max_statement_time = 0",
  "PREPARE s FROM 'SET max_statement_time=0'",
  "BEGIN NOT ATOMIC SELECT SLEEP(30); END",
  "SELECT 'x' INTO OUTFILE '/tmp/hs_escape_out.txt'",
  "SELECT 'x' INTO DUMPFILE '/tmp/hs_escape_out.txt'",
  "SELECT LOAD_FILE('/etc/passwd')",
  // Issue 30, item 12: a backtick-quoted function name is the same function to the server.
  "SELECT `LOAD_FILE`('/etc/passwd')",
  "SELECT `load_file` ('/etc/hosts')",
  "SELECT 1 UNION SELECT `Load_File`(CONCAT('/etc/', 'passwd'))",
  "LOAD DATA INFILE '/etc/passwd' INTO TABLE t",
  "SELECT * FROM mysql.user",
  "CREATE DATABASE hs_escape",
  "SET GLOBAL max_connections = 1",
  "GRANT ALL ON *.* TO CURRENT_USER",
  "WITH a AS (SELECT 1) SELECT SLEEP(30) FROM a",
  "SELECT SLEEP(30)",
];

let rows: DbBenchRow[];
let cwdBefore: string[];
beforeAll(async () => {
  rows = await loadSplit(BUNDLED_DATA_DIR, "dev");
  cwdBefore = readdirSync(process.cwd());
});
const newFiles = () => [
  ...readdirSync(process.cwd()).filter((f) => !cwdBefore.includes(f) || files.includes(f)),
  ...files.filter((f) => f.startsWith("/") && existsSync(f)),
];
const escapes = async (session: SqlSession, statements: string[]) => {
  const succeeded: string[] = [];
  for (const sql of statements) if ((await session.execute(sql)).kind !== "error") succeeded.push(sql);
  return succeeded;
};

describe("SQLite sandbox", () => {
  const engine = new SqliteEngine({ statementMs: 1_000, maxRows: 500 });
  afterAll(() => engine.shutdown());

  it(`refuses all ${sqliteEscapes.length} escapes, creates no file, and still answers afterwards`, async () => {
    const db = await engine.open(rows[0]!);
    expect(await escapes(db, sqliteEscapes)).toEqual([]);
    expect(newFiles()).toEqual([]);
    expect((await db.execute("SELECT 1")).text).toBe("[(1,)]");
    await db.close();
  });

  it("stops a statement that never ends, keeps the database as it was, and caps the rows it reads", async () => {
    const db = await engine.open(rows[0]!);
    await db.execute("CREATE TABLE kept (a TEXT)");
    await db.execute("INSERT INTO kept VALUES ('still here')");
    const started = Date.now();
    const endless = await db.execute(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    );
    expect(endless).toMatchObject({ kind: "error", errorClass: "timeout" });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await db.execute("SELECT a FROM kept")).text).toBe("[('still here',)]");
    const many = await db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c");
    expect(many).toMatchObject({ kind: "rows", truncated: true });
    expect(many.rowCount).toBeLessThan(500);
    expect(many.text).toMatch(/^\[\(1,\), \(2,\).*\[TRUNCATED\]$/);
    await db.close();
  });
});

describe("MySQL sandbox (MariaDB)", () => {
  let engine: MysqlEngine;
  const prefix = "hsesc_";
  beforeAll(async () => {
    engine = await MysqlEngine.start({ prefix, statementSeconds: 1, maxRows: 500, maxDatabaseBytes: 4 * 1024 * 1024 });
  }, 30_000);
  afterAll(() => engine?.shutdown());

  it(`refuses all ${mysqlEscapes.length} escapes (SLEEP is stopped at the limit), creates no file`, async () => {
    const db = await engine.open(rows[0]!);
    const started = Date.now();
    expect(await escapes(db, mysqlEscapes)).toEqual([]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(newFiles()).toEqual([]);
    expect((await db.execute("SELECT 1")).text).toBe("[(1,)]");
    await db.close();
  }, 30_000);

  it("reads at most the row cap of a cartesian join, stops a write that outgrows the database, survives a 20 MB statement", async () => {
    // The row, size and statement caps are under test, not the clock: a statement limit far past
    // any run time here (the 1 s engine is for SLEEP above), so a loaded machine cannot turn a
    // cap into a timeout.
    const roomy = await MysqlEngine.start({
      prefix,
      statementSeconds: 60,
      maxRows: 500,
      maxDatabaseBytes: 4 * 1024 * 1024,
    });
    const db = await roomy.open(rows[0]!);
    const t = `\`${rows[0]!.table[0]!.table_name}\``;
    try {
      const rss = process.memoryUsage().rss;
      const join3 = await db.execute(`SELECT * FROM ${t} a, ${t} b, ${t} c`);
      expect(join3).toMatchObject({ kind: "rows", truncated: true });
      expect(join3.rowCount).toBeLessThan(500);
      expect(process.memoryUsage().rss - rss).toBeLessThan(200 * 1024 * 1024);
      const huge = await db.execute(`SELECT '${"x".repeat(20 * 1024 * 1024)}'`);
      expect(huge.kind).toBe("error");
      expect((await db.execute("SELECT 2")).text).toBe("[(2,)]");
    } finally {
      await db.close();
    }
    const small = await roomy.open(rows[0]!);
    const grow = await small.execute(
      `CREATE TABLE big AS SELECT a.*, REPEAT('x', 2000) AS pad FROM ${t} a, ${t} b, ${t} c`,
    );
    expect(grow.kind).toBe("error");
    expect(grow.text).toMatch(/database is (full|over its limit)/);
    if (grow.text.includes("over its limit")) {
      expect((await small.execute(`INSERT INTO big SELECT * FROM big`)).text).toMatch(/over its limit/);
      expect(await small.execute("DROP TABLE big")).toMatchObject({ kind: "ok" }); // the whole result, its text included, on a failure
    }
    expect(await small.execute("CREATE TABLE fits (a TEXT)")).toMatchObject({ kind: "ok" });
    await small.close();
    await roomy.shutdown();
  }, 240_000);

  it("leaves no database or user after a normal end, a crashed owner, or a second engine in the same process", async () => {
    const first = await engine.open(rows[0]!);
    const second = await MysqlEngine.start({ prefix });
    expect((await first.execute("SELECT 3")).text).toBe("[(3,)]");
    await second.shutdown();
    await first.close();
    expect(await engine.leftovers()).toEqual({ databases: 0, users: 0 });

    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(process.cwd(), "tests/fixtures/mysql-engine-then-hang.ts"), prefix],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => (d.toString().includes("ready") ? resolve() : undefined));
      child.once("exit", (code) => reject(new Error(`fixture exited early (${code})`)));
    });
    expect(await engine.leftovers()).toEqual({ databases: 2, users: 4 });
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const afterCrash = await MysqlEngine.start({ prefix });
    // The server frees a killed owner's lock when it notices the dropped connection: sweep until
    // it has (the owner's leftovers stay until then), not after a guessed delay.
    for (let tries = 0; tries < 600 && (await afterCrash.leftovers()).databases > 0; tries++) {
      await afterCrash.sweep();
      if ((await afterCrash.leftovers()).databases > 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(await afterCrash.leftovers()).toEqual({ databases: 0, users: 0 });
    await afterCrash.shutdown();
  }, 120_000);
});
