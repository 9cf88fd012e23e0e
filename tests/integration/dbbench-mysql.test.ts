import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import mysql from "mysql2/promise";
import { runEpisode, type Policy } from "@harness-s/core";
import {
  BUNDLED_DATA_DIR,
  DbBenchEnvironment,
  MysqlEngine,
  SqliteEngine,
  dbbenchH0,
  goldPolicy,
  loadSplit,
  rowTask,
  verifyGold,
  type DbBenchRow,
} from "@harness-s/dbbench";

let engine: MysqlEngine;
let standard: DbBenchRow[];
let dev: DbBenchRow[];
let admin: mysql.Connection;

beforeAll(async () => {
  engine = await MysqlEngine.start({ prefix: "hsmy_", statementSeconds: 2 }); // its own prefix: leftovers are counted by prefix, and other files use the server at once
  [standard, dev] = await Promise.all([loadSplit(BUNDLED_DATA_DIR, "standard"), loadSplit(BUNDLED_DATA_DIR, "dev")]);
  admin = await mysql.createConnection({ host: "127.0.0.1", port: 3306, user: "root" });
}, 60_000);
afterAll(async () => {
  await admin?.end();
  await engine?.shutdown();
});

describe("DBBench gold replay through the full environment (MariaDB)", () => {
  it("standard: 199 of 200 mutations (standard-225 is unreachable) and all 100 selects", async () => {
    const r = await verifyGold(standard, engine, "standard", { concurrency: 8 });
    expect(r.mutations).toEqual({ matched: 199, total: 200 });
    expect(r.selects).toEqual({ matched: 100, total: 100 });
    expect(r.unmatched).toEqual(["standard-225"]);
  }, 120_000);

  it("dev: all 60", async () => {
    const r = await verifyGold(dev, engine, "dev", { concurrency: 8 });
    expect(r.mutations).toEqual({ matched: 40, total: 40 });
    expect(r.selects).toEqual({ matched: 20, total: 20 });
  }, 240_000);

  it("SQLite: 198 of 200 standard mutations (accent-insensitive match, and 225), all selects; dev all 60", async () => {
    const sqlite = new SqliteEngine();
    const r = await verifyGold(standard, sqlite, "standard");
    expect(r.mutations).toEqual({ matched: 198, total: 200 });
    expect(r.selects.matched).toBe(100);
    expect(r.unmatched).toEqual(["standard-206", "standard-225"]);
    const d = await verifyGold(dev, sqlite, "dev");
    expect(d.mutations.matched + d.selects.matched).toBe(60);
  }, 240_000);
});

describe("rollout isolation on the MariaDB server", () => {
  const row = () => dev.find((r) => r.type[0] === "UPDATE")!;

  // Users besides the rollouts' own (every test engine's prefix starts with "hs"): other files open and close rollouts
  // on the server meanwhile.
  const OTHER_USERS = "SELECT COUNT(*) AS c FROM mysql.user WHERE user NOT LIKE 'hs%'";
  it("a rollout cannot drop the mysql database, read another rollout's database, write files or change server settings; nothing outside changes", async () => {
    // Prepare
    const [[usersBefore]] = (await admin.query(OTHER_USERS)) as unknown as [{ c: number }[]];
    const [a, b] = await Promise.all([engine.open(row()), engine.open(row())]);
    const table = row().table[0]!.table_name;
    const otherDb = (b as unknown as { name: string }).name;
    const before = await b.tablesHash(row().table);
    const outfile = `/tmp/hs-outfile-${process.pid}.txt`;
    // Act
    const attempts = {
      dropMysql: await a.execute("DROP DATABASE mysql"),
      readOther: await a.execute(`SELECT * FROM \`${otherDb}\`.\`${table}\``),
      updateOther: await a.execute(
        `UPDATE \`${otherDb}\`.\`${table}\` SET \`${row().table[0]!.table_info.columns[0]!.name}\` = 'x'`,
      ),
      outfile: await a.execute(`SELECT * FROM \`${table}\` INTO OUTFILE '${outfile}'`),
      loadFile: await a.execute("SELECT LOAD_FILE('/etc/passwd')"),
      setGlobal: await a.execute("SET GLOBAL max_connections = 1"),
      createUser: await a.execute("CREATE USER 'evil'@'%'"),
      grant: await a.execute(`GRANT ALL ON *.* TO CURRENT_USER()`),
    };
    // Assess
    const after = await b.tablesHash(row().table);
    await Promise.all([a.close(), b.close()]);
    for (const [what, r] of Object.entries(attempts)) expect(r.kind, `${what}: ${r.text}`).toBe("error");
    expect(attempts.readOther.text).toMatch(/denied/i);
    expect(attempts.dropMysql.text).toMatch(/denied/i);
    expect(attempts.loadFile.text).toMatch(/LOAD_FILE is not allowed/); // refused before it reaches the server (which would read nothing: no FILE privilege)
    expect(existsSync(outfile)).toBe(false);
    expect(after).toBe(before);
    const [[usersAfter]] = (await admin.query(OTHER_USERS)) as unknown as [{ c: number }[]];
    expect(usersAfter!.c).toBe(usersBefore!.c);
    const [[mc]] = (await admin.query("SELECT @@GLOBAL.max_connections AS m")) as unknown as [{ m: number }[]];
    expect(Number(mc!.m)).toBeGreaterThan(1);
  });

  it("a runaway statement is stopped by the per-statement limit and the episode goes on", async () => {
    const db = await engine.open(row());
    try {
      const t = `\`${row().table[0]!.table_name}\``;
      const c = `\`${row().table[0]!.table_info.columns[0]!.name}\``;
      const r = await db.execute(
        `SELECT COUNT(*) FROM ${t} a, ${t} b, ${t} c, ${t} d, ${t} e, ${t} f WHERE MD5(CONCAT(a.${c}, b.${c}, c.${c}, d.${c}, e.${c}, f.${c})) = 'x'`,
      );
      expect(r.kind, r.text).toBe("error");
      expect(r.errorClass).toBe("timeout");
      expect((await db.execute("SELECT 1")).text).toBe("[(1,)]");
    } finally {
      await db.close();
    }
  }, 30_000);

  it("300 rollouts, 8 at a time, some crashing mid-episode: no database or user is left on the server", async () => {
    // Prepare
    const env = new DbBenchEnvironment(dev, engine);
    const crashing: Policy = {
      version: () => 0,
      act: async () => Promise.reject(new Error("policy crashed")),
      update: async () => Promise.reject(new Error("no")),
    };
    let next = 0;
    let crashes = 0;
    let successes = 0;
    // Act
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < 300; i = next++) {
          const r = dev[i % dev.length]!;
          if (i % 10 === 0)
            await runEpisode(rowTask(r), dbbenchH0, i, { env, policy: crashing }).catch(() => crashes++);
          else if ((await runEpisode(rowTask(r), dbbenchH0, i, { env, policy: goldPolicy(r) })).success) successes++;
        }
      }),
    );
    // Assess
    expect(crashes).toBe(30);
    expect(successes).toBe(270);
    expect(await engine.leftovers()).toEqual({ databases: 0, users: 0 });
  }, 120_000);

  it("databases and users left by a process that died are swept when an engine starts", async () => {
    // Prepare: what a killed process (a pid that is not running) would have left
    const dead = `${engine.options.prefix}${(2 ** 22 + 12345).toString(36)}_1_abcdef`;
    await admin.query(`CREATE DATABASE \`${dead}\``);
    await admin.query("CREATE USER ?@'localhost' IDENTIFIED BY 'x'", [dead]);
    // Act
    const fresh = await MysqlEngine.start({ prefix: engine.options.prefix });
    // Assess
    expect(await fresh.leftovers()).toEqual({ databases: 0, users: 0 });
    await fresh.shutdown();
  });
});
