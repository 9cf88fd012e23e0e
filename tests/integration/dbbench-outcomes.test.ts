import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseHarnessSpec, runEpisode, type ActionChoice, type Policy } from "@harness-s/core";
import {
  BUNDLED_DATA_DIR,
  DbBenchEnvironment,
  SqliteEngine,
  isMutation,
  loadSplit,
  rowTask,
  type DbBenchRow,
} from "@harness-s/dbbench";

let engine: SqliteEngine;
let rows: DbBenchRow[];
beforeAll(async () => {
  engine = new SqliteEngine();
  rows = await loadSplit(BUNDLED_DATA_DIR, "dev");
});
afterAll(async () => engine?.shutdown?.());

/** A policy that plays fixed tool calls. */
const play = (calls: ActionChoice[]): Policy => {
  let i = 0;
  return {
    version: () => 0,
    act: async () => calls[Math.min(i++, calls.length - 1)]!,
    update: async () => ({ version: 0, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } }),
  };
};
const sql = (query: string): ActionChoice => ({ action: "execute_sql", args: { query }, logProb: 0 });
const commit = (answers: unknown[]): ActionChoice => ({ action: "submit", args: { answers }, logProb: 0 });
const h0 = parseHarnessSpec({ id: "h", budget: { maxTurns: 3 }, provenance: { direction: "base" } });

async function outcome(row: DbBenchRow, calls: ActionChoice[]) {
  const r = await runEpisode(rowTask(row), h0, 1, { env: new DbBenchEnvironment([row], engine), policy: play(calls) });
  return { tags: r.failureTags, behaviours: r.behaviours, success: r.success };
}

describe("DBBench rollouts say why they failed and how the agent worked (SQLite)", () => {
  it("tags an empty answer, a malformed one, a wrong one, rounds exhausted with the SQL error classes hit, and a mutation never applied", async () => {
    const select = rows.find((r) => !isMutation(r))!;
    const table = select.table[0]!.table_name;
    const insert = rows.find((r) => r.type[0] === "INSERT")!;
    expect((await outcome(select, [commit([])])).tags).toEqual(["empty-answer"]);
    expect((await outcome(select, [commit(["SELECT 1"])])).tags).toEqual(["answer-shape"]);
    expect((await outcome(select, [commit(["surely-not-the-answer"])])).tags).toEqual(["wrong-answer"]);
    expect(
      (await outcome(select, [sql("SELEC nothing"), sql(`SELECT nope FROM \`${table}\``), sql("SELEC again")])).tags,
    ).toEqual(["rounds-exhausted", "sql-error:syntax", "sql-error:unknown-column"]);
    expect((await outcome(insert, [commit([])])).tags).toEqual(["mutation-not-applied"]);
  });

  it("records schema inspection first and verification before the answer", async () => {
    const select = rows.find((r) => !isMutation(r))!;
    const table = select.table[0]!.table_name;
    const careful = await outcome(select, [sql(`SELECT * FROM \`${table}\` LIMIT 1`), commit(select.label)]);
    expect(careful.behaviours).toMatchObject({ "verified-before-answer": true, "schema-first": false });
    expect(careful.success).toBe(true);
    const hasty = await outcome(select, [commit(select.label)]);
    expect(hasty.behaviours).toMatchObject({ "verified-before-answer": false, "queried-before-commit": false });
    const insert = rows.find((r) => r.type[0] === "INSERT")!;
    const checked = await outcome(insert, [
      sql(insert.label[0]!),
      sql(`SELECT COUNT(*) FROM \`${insert.table[0]!.table_name}\``),
      commit([]),
    ]);
    expect(checked.behaviours).toMatchObject({ "verified-before-answer": true });
  });
});

describe("bench --env dbbench", () => {
  it("prints setup and teardown per rollout against an empty database's create and drop, and rollouts/s at concurrency 1, 4, 8, on SQLite (sandboxes reused, and a process per rollout) and MariaDB", async () => {
    const { benchDbbench } = await import("@harness-s/dbbench");
    const out = (await benchDbbench({ rows: 4 })).join("\n"); // few rows: the table's shape is under test, not the figures
    for (const engine of ["sqlite", "mysql"])
      expect(out).toMatch(
        new RegExp(
          `${engine} +setup [\\d.]+ ms, teardown [\\d.]+ ms per rollout .*empty database create\\+drop [\\d.]+ ms; ratio [\\d.]+×`,
        ),
      );
    expect(out).toMatch(/sqlite: sandbox processes reused\n.*\n(.*\n){3}sqlite: a sandbox process per rollout\n/);
    expect(out.match(/concurrency +[148]: +[\d.]+ rollouts\/s \(4\/4 gold rollouts solved\)/g)).toHaveLength(9);
  }, 120_000);
});
