import { percentile } from "@harness-s/core/metrics";
import { rolloutsIn, type ActionChoice, type Policy } from "@harness-s/core";
import { BUNDLED_DATA_DIR, isMutation, loadSplit, rowTask, type DbBenchRow } from "./data.ts";
import type { SqlEngine } from "./engines/engine.ts";
import { openEngine } from "./engines/open.ts";
import { SqliteEngine } from "./engines/sqlite.ts";
import { DbBenchEnvironment } from "./environment.ts";
import { dbbenchH0 } from "./harnesses.ts";
import { mapLimit } from "./verify.ts";

/** The gold, played as tool calls (a mutation's SQL, then the commit): the environment's own cost, no model. */
function goldPolicy(row: DbBenchRow): Policy {
  const calls: ActionChoice[] = [
    ...(isMutation(row) ? row.label.map((query) => ({ action: "execute_sql", args: { query }, logProb: 0 })) : []),
    { action: "submit", args: { answers: isMutation(row) ? [] : row.label }, logProb: 0 },
  ];
  let i = 0;
  return {
    version: () => 0,
    act: async () => calls[Math.min(i++, calls.length - 1)]!,
    update: async () => ({ version: 0, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } }),
  };
}

const ms = (xs: number[]) => `${percentile(xs, 50).toFixed(1)} ms`;

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** One engine's figures: setup and teardown per rollout, the raw empty-database cycle, rollouts/s by concurrency. */
async function benchEngine(
  engine: SqlEngine,
  rows: readonly DbBenchRow[],
  levels: readonly number[],
): Promise<string[]> {
  const setup: number[] = [];
  const teardown: number[] = [];
  for (const row of rows) {
    const t0 = performance.now();
    const db = await engine.open(row);
    setup.push(performance.now() - t0);
    teardown.push(await timed(() => db.close()));
  }
  const raw: number[] = [];
  for (let i = 0; i < rows.length; i++) raw.push(await timed(() => engine.emptyDatabaseCycle()));
  const perRollout = percentile(setup, 50) + percentile(teardown, 50);
  const lines = [
    `${engine.name.padEnd(7)} setup ${ms(setup)}, teardown ${ms(teardown)} per rollout (p50 over ${rows.length} rows); ` +
      `empty database create+drop ${ms(raw)}; ratio ${(perRollout / Math.max(1e-3, percentile(raw, 50))).toFixed(1)}×`,
  ];
  const env = new DbBenchEnvironment(rows, engine);
  for (const c of levels) {
    const t0 = performance.now();
    const done = await mapLimit(rows, c, (row) => rolloutsIn(env, goldPolicy(row))(rowTask(row), dbbenchH0, 1));
    const s = (performance.now() - t0) / 1000;
    const solved = done.filter((r) => r.success).length;
    lines.push(
      `${"".padEnd(7)} concurrency ${String(c).padStart(2)}: ${(done.length / s).toFixed(1).padStart(6)} rollouts/s (${solved}/${done.length} gold rollouts solved)`,
    );
  }
  return lines;
}

/**
 * `bench --env dbbench`: DBBench's own cost per rollout (a fresh database with the row's tables,
 * dropped after) and rollouts/s at concurrency 1, 4 and 8 with the gold played as tool calls, on
 * SQLite and on the MariaDB/MySQL server at `mysqlUrl` (skipped, and said so, when none answers),
 * next to the plainest create-and-drop of an empty database on the same server, in the same run.
 */
export async function benchDbbench(opts: { rows?: number; mysqlUrl?: string } = {}): Promise<string[]> {
  const dev = await loadSplit(BUNDLED_DATA_DIR, "dev");
  const rows = dev.slice(0, opts.rows ?? dev.length);
  const lines = [`DBBench environment, gold played as tool calls on ${rows.length} dev rows`];
  // SQLite as it runs (sandbox processes reused), then with a new sandbox process per rollout, the cost reuse removes.
  for (const [label, sqlite] of [
    ["sandbox processes reused", new SqliteEngine()],
    ["a sandbox process per rollout", new SqliteEngine({ sandboxes: { rolloutsPerProcess: 1, maxIdle: 0 } })],
  ] as const) {
    lines.push(`sqlite: ${label}`);
    try {
      lines.push(...(await benchEngine(sqlite, rows, [1, 4, 8])));
    } finally {
      await sqlite.shutdown();
    }
  }
  let mysql: SqlEngine | undefined;
  try {
    mysql = await openEngine({ engine: "mysql", mysqlUrl: opts.mysqlUrl ?? "mysql://root@127.0.0.1:3306" });
  } catch (err) {
    lines.push(`mysql   skipped: ${(err as Error).message}`);
  }
  if (mysql) {
    try {
      lines.push(...(await benchEngine(mysql, rows, [1, 4, 8])));
    } finally {
      await mysql.shutdown();
    }
  }
  return lines;
}
