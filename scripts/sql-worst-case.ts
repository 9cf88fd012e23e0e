// Peak memory and time of the worst single statements found within the row cap, on each engine:
// the rollout process's RSS (sampled every 5 ms) and, for SQLite, its sandbox process's.
// Run: node --import tsx scripts/sql-worst-case.ts   (MariaDB on 127.0.0.1:3306 for the mysql half)
import { readFileSync, readdirSync } from "node:fs";
import { BUNDLED_DATA_DIR, MysqlEngine, SqliteEngine, loadSplit, type SqlEngine } from "@harness-s/dbbench";

const rssOf = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
};
const children = () =>
  readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ")[1] === String(process.pid);
      } catch {
        return false;
      }
    })
    .map(Number);

async function measure(engine: SqlEngine, statements: string[]) {
  const [row] = await loadSplit(BUNDLED_DATA_DIR, "dev");
  for (const sql of statements) {
    const db = await engine.open(row!);
    const base = process.memoryUsage().rss;
    let peak = base;
    let childPeak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
      childPeak = Math.max(childPeak, ...children().map(rssOf), 0);
    }, 5);
    const started = performance.now();
    const r = await db.execute(sql);
    const ms = performance.now() - started;
    clearInterval(sampler);
    const kind =
      r.kind === "error"
        ? `error: ${r.text.slice(0, 70)}`
        : `${r.kind}, ${r.rowCount} rows read, ${r.text.length} chars shown`;
    console.log(
      `| ${engine.name} | \`${sql.length > 90 ? `${sql.slice(0, 87)}…` : sql}\` | ${ms.toFixed(0)} ms | +${((peak - base) / 1e6).toFixed(1)} MB (${(peak / 1e6).toFixed(0)} MB) | ${engine.name === "sqlite" ? `${(childPeak / 1e6).toFixed(0)} MB` : "—"} | ${kind} |`,
    );
    await db.close();
  }
}

console.log(
  "| engine | statement | time | rollout process RSS: growth (peak) | sandbox RSS peak | result |\n|---|---|---|---|---|---|",
);
const rows = (n: number, v: string) =>
  `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${n}) SELECT ${v} FROM c`;
const sqlite = new SqliteEngine();
await measure(sqlite, [
  rows(10_000, "printf('%.*c', 20000, 'x')"),
  rows(10_000, "printf('%.*c', 100000, 'x')"),
  "SELECT printf('%.*c', 100000000, 'x')",
  "SELECT randomblob(200000000)",
  rows(10_000, "randomblob(50000)"),
  "SELECT group_concat(printf('%.*c', 20000, 'x')) FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000) SELECT i FROM c)",
]);
await sqlite.shutdown();
const mysql = await MysqlEngine.start({ prefix: "hsworst_" });
await measure(mysql, [
  "SELECT REPEAT('a', 20000) FROM seq_1_to_10000",
  "SELECT REPEAT('a', 1000000) FROM seq_1_to_10000",
  "SELECT REPEAT('a', 16000000)",
  "SELECT REPEAT('x', 50000), REPEAT('y', 50000) FROM seq_1_to_100 a, seq_1_to_100 b",
  "SELECT GROUP_CONCAT(REPEAT('a', 20000)) FROM seq_1_to_10000",
]);
await mysql.shutdown();
