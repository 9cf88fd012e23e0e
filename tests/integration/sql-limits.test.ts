import { afterAll, beforeAll, describe, expect, it } from "vitest";
import mysql from "mysql2/promise";
import {
  BUNDLED_DATA_DIR,
  MysqlEngine,
  OTHER_ENGINES,
  SqliteEngine,
  loadSplit,
  type DbBenchRow,
  type SqlSession,
} from "@harness-s/dbbench";

// Issue 18's SQL classes, each with the example that broke main and a variant: one result must
// never take down the rollout process, every byte an agent writes is counted, the guard reads
// `--` as the server does, and SQLite's recovery neither grows with the episode nor loses writes.
let rows: DbBenchRow[];
beforeAll(async () => {
  rows = await loadSplit(BUNDLED_DATA_DIR, "dev");
});

/** Runs `sql` while sampling this process's RSS; answers the result and the peak growth in MB. */
async function withPeakRss(db: SqlSession, sql: string) {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const result = await db.execute(sql);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { result, grewMb: (peak - before) / 1e6 };
}

const SHOWN = /^\[\('x{797}\[TRUNCATED\]$/;
const rowsOf = (n: number, value: string) =>
  `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${n}) SELECT ${value} FROM c`;

describe("SQLite: a huge result, a huge database, a timeout", () => {
  // The size tests are about the size limits: their statement limit is far past any run time
  // here, so a loaded machine cannot turn one into a timeout. The timeout test has its own 2 s.
  const engine = new SqliteEngine({ statementMs: 120_000 });
  const hurried = new SqliteEngine({ statementMs: 2_000 });
  afterAll(() => Promise.all([engine.shutdown(), hurried.shutdown()]));

  it("shows 800 characters of 10,000 rows of 20 KB (and of one 60 MB value) without holding the result", async () => {
    const db = await engine.open(rows[0]!);
    const wide = await withPeakRss(db, rowsOf(10_000, "printf('%.*c', 20000, 'x')"));
    expect(wide.result).toMatchObject({ kind: "rows", truncated: true });
    expect(wide.result.text).toMatch(SHOWN);
    expect(wide.grewMb).toBeLessThan(64);
    const one = await withPeakRss(db, "SELECT printf('%.*c', 60000000, 'x')");
    expect(one.result.text).toMatch(SHOWN);
    expect(one.grewMb).toBeLessThan(64);
    expect((await db.execute("SELECT 1")).text).toBe("[(1,)]");
    await db.close();
  }, 240_000);

  it("fails a write past the database cap, and a value past the sandbox's memory, and keeps answering", async () => {
    const db = await engine.open(rows[0]!);
    await db.execute("CREATE TABLE b (x BLOB)");
    const full = await db.execute(
      "INSERT INTO b SELECT randomblob(100000000) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)",
    );
    expect(full).toMatchObject({ kind: "error" });
    expect(full.text).toMatch(/full|too big|out of memory/);
    const transient = await db.execute("SELECT length(randomblob(400000000)), length(randomblob(400000000))");
    expect(transient.kind).toBe("error");
    expect((await db.execute("INSERT INTO b VALUES (x'00')")).kind).toBe("ok");
    expect((await db.execute("SELECT count(*) FROM b")).text).toBe("[(1,)]");
    expect((await db.execute("CREATE TEMP TABLE t (a)")).errorClass).toBe("denied");
    await db.close();
  }, 240_000);

  it("fills to its cap and no further, telling the agent the truth about every write", async () => {
    const db = await engine.open(rows[0]!);
    await db.execute("CREATE TABLE b (x BLOB)");
    let told = 0;
    for (let i = 0; i < 24; i++)
      if ((await db.execute("INSERT INTO b VALUES (randomblob(1000000))")).kind === "ok") told++;
    expect(told).toBeGreaterThan(10);
    expect(told).toBeLessThan(17);
    expect((await db.execute("SELECT count(*) FROM b")).text).toBe(`[(${told},)]`);
    expect((await db.execute("DELETE FROM b")).kind).toBe("ok");
    expect((await db.execute("INSERT INTO b VALUES (randomblob(1000000))")).kind).toBe("ok");
    await db.close();
    // A cap set past what the sandbox can snapshot: a write whose snapshot cannot reach the
    // parent ends the sandbox and is undone, so what the agent was told still holds.
    const roomy = new SqliteEngine({ maxDatabaseBytes: 64 * 1024 * 1024, statementMs: 120_000 });
    const big = await roomy.open(rows[0]!);
    await big.execute("CREATE TABLE b (x BLOB)");
    let ok = 0;
    for (let i = 0; i < 9; i++)
      if ((await big.execute("INSERT INTO b VALUES (randomblob(7000000))")).kind === "ok") ok++;
    expect((await big.execute("SELECT count(*) FROM b")).text).toBe(`[(${ok},)]`);
    await roomy.shutdown();
  }, 240_000);

  it("restores the database after a timeout without re-running a write: RETURNING rows stay, random values keep their value", async () => {
    const db = await hurried.open(rows[0]!);
    await db.execute("CREATE TABLE r AS SELECT abs(random()) AS v");
    await db.execute("CREATE TABLE k (a TEXT)");
    const returned = await db.execute("INSERT INTO k VALUES ('kept') RETURNING a");
    expect(returned).toMatchObject({ kind: "rows", text: "[('kept',)]" });
    const drawn = (await db.execute("SELECT v FROM r")).text;
    const endless = await db.execute(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    );
    expect(endless.errorClass).toBe("timeout");
    expect((await db.execute("SELECT v FROM r")).text).toBe(drawn);
    expect((await db.execute("SELECT a FROM k")).text).toBe("[('kept',)]");
    await db.close();
  });
});

describe("MariaDB: a huge result, uncounted storage, the `--` reading", () => {
  let engine: MysqlEngine;
  let db: SqlSession;
  beforeAll(async () => {
    engine = await MysqlEngine.start({ prefix: "hslim_", statementSeconds: 5 });
    db = await engine.open(rows[0]!);
  }, 30_000);
  afterAll(async () => {
    await db?.close();
    await engine?.shutdown();
  });

  it("shows 800 characters of 10,000 rows of 20 KB (and of 100 × 100 rows of 50 KB) without holding the result", async () => {
    const seq = await withPeakRss(db, "SELECT REPEAT('x', 20000) FROM seq_1_to_10000");
    expect(seq.result).toMatchObject({ kind: "rows", truncated: true });
    expect(seq.result.text).toMatch(SHOWN);
    expect(seq.grewMb).toBeLessThan(64);
    const joined = await withPeakRss(db, "SELECT REPEAT('x', 50000) FROM seq_1_to_100 a, seq_1_to_100 b");
    expect(joined.result.text).toMatch(SHOWN);
    expect(joined.grewMb).toBeLessThan(64);
    expect((await db.execute("SELECT 1")).text).toBe("[(1,)]");
  });

  it("refuses temporary tables and every engine but InnoDB, in any spelling, and keeps columns called engine", async () => {
    const refused = [
      "CREATE TEMPORARY TABLE tt AS SELECT REPEAT('x', 1000) AS a FROM seq_1_to_10",
      "create or replace /* x */ temporary table tt (a INT)",
      "CREATE TABLE c1 (a TEXT) ENGINE=CSV",
      "CREATE TABLE c2 (a TEXT) ENGINE = 'MEMORY'",
      "CREATE TABLE c3 ENGINE Aria AS SELECT 1 AS a",
      "CREATE TABLE c4 (a INT) engine=`MyISAM`",
    ];
    for (const sql of refused) expect((await db.execute(sql)).kind, sql).toBe("error");
    expect((await db.execute("CREATE TABLE cars (Engine TEXT, a INT) ENGINE=InnoDB")).kind).toBe("ok");
    expect((await db.execute("ALTER TABLE cars ENGINE = CSV")).kind).toBe("error");
    expect((await db.execute("ALTER TABLE cars ADD COLUMN engine2 TEXT")).kind).toBe("ok");
    expect((await db.execute("INSERT INTO cars (Engine) VALUES ('V8')")).kind).toBe("ok");
    expect((await db.execute("SELECT Engine FROM cars")).text).toBe("[('V8',)]");
  });

  it("drops a table of another engine that reached the server by a spelling the guard does not know", async () => {
    const admin = await mysql.createConnection({ host: "127.0.0.1", user: "root" });
    const name = (db as unknown as { name: string }).name;
    await admin.query(`CREATE TABLE \`${name}\`.sneaky (a TEXT NOT NULL) ENGINE=CSV`);
    await admin.end();
    const next = await db.execute("CREATE TABLE after_sneak (a TEXT)");
    expect(next.text).toMatch(/only InnoDB tables.*sneaky/);
    expect((await db.execute("SELECT * FROM sneaky")).text).toMatch(/doesn't exist/);
  });

  it("knows every storage engine the server offers", async () => {
    const admin = await mysql.createConnection({ host: "127.0.0.1", user: "root" });
    const [engines] = (await admin.query("SELECT ENGINE AS e FROM information_schema.ENGINES")) as unknown as [
      { e: string }[],
    ];
    await admin.end();
    expect(engines.map((r) => r.e.toUpperCase()).filter((e) => e !== "INNODB" && !OTHER_ENGINES.has(e))).toEqual([]);
  });

  it("reads `1--1` as the server does (minus minus one), so INTO OUTFILE after it is seen", async () => {
    expect((await db.execute("SELECT 1--1")).text).toBe("[(2,)]");
    for (const sql of [
      "SELECT 1--1 INTO OUTFILE 'x.out'",
      "SELECT 1--1 UNION SELECT LOAD_FILE('/etc/passwd')",
      "SELECT 2---1 INTO DUMPFILE '/tmp/x'",
      "/*!99999 SELECT 1 */ SET max_statement_time=0",
    ]) {
      const r = await db.execute(sql);
      expect(r.errorClass, sql).toBe("denied");
      expect(r.text, sql).toMatch(/not allowed/);
    }
  });
});
