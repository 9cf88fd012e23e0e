import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUNDLED_DATA_DIR, SqliteEngine, loadSplit, type DbBenchRow } from "@harness-s/dbbench";

// SQLite's sandbox processes are reused (a Node process costs about 100 ms of CPU to start, more
// than a short rollout's statements): each serves one rollout at a time, with a fresh database.
let rows: DbBenchRow[];
beforeAll(async () => {
  rows = await loadSplit(BUNDLED_DATA_DIR, "dev");
});

describe("SQLite sandbox processes reused across rollouts", () => {
  const engines: SqliteEngine[] = [];
  const engine = (o: ConstructorParameters<typeof SqliteEngine>[0]) => {
    const e = new SqliteEngine(o);
    engines.push(e);
    return e;
  };
  afterAll(() => Promise.all(engines.map((e) => e.shutdown())));

  it("gives the next rollout in the same process a fresh database: nothing one rollout wrote or dropped is seen by the next", async () => {
    // Prepare
    const sqlite = engine({ sandboxes: { rolloutsPerProcess: 64, maxIdle: 1 } });
    const [first, second] = [rows[0]!, rows[1]!];
    const table = second.table[0]!.table_name;
    // Act
    const a = await sqlite.open(first);
    await a.execute("CREATE TABLE leak (x TEXT)");
    await a.execute("INSERT INTO leak VALUES ('secret')");
    await a.close();
    const b = await sqlite.open(second);
    const leaked = await b.execute("SELECT x FROM leak");
    const count = await b.execute(`SELECT count(*) FROM \`${table}\``);
    await b.execute(`DROP TABLE \`${table}\``);
    await b.close();
    const c = await sqlite.open(second);
    const restored = await c.execute(`SELECT count(*) FROM \`${table}\``);
    await c.close();
    // Assess
    expect(sqlite.sandboxes.started).toBe(1);
    expect(leaked).toMatchObject({ kind: "error", errorClass: "unknown-table" });
    expect(count.text).toBe(`[(${second.table[0]!.table_info.rows.length},)]`);
    expect(restored.text).toBe(count.text);
  });

  it("hands a process to one rollout at a time, ends one after its rollouts or a timed-out statement, and keeps at most maxIdle", async () => {
    // Prepare
    const sqlite = engine({ statementMs: 1_000, sandboxes: { rolloutsPerProcess: 2, maxIdle: 1 } });
    // Act: two rollouts at once, then a third and a fourth (the reused process's second and last), then a timeout
    const [a, b] = await Promise.all([sqlite.open(rows[0]!), sqlite.open(rows[1]!)]);
    const together = sqlite.sandboxes.started;
    await Promise.all([a.close(), b.close()]);
    await (await sqlite.open(rows[2]!)).close();
    const afterReuse = sqlite.sandboxes.started;
    await (await sqlite.open(rows[3]!)).close();
    const afterLimit = sqlite.sandboxes.started;
    const slow = await sqlite.open(rows[4]!);
    const timedOut = await slow.execute(
      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c",
    );
    const afterTimeout = sqlite.sandboxes.started;
    expect((await slow.execute("SELECT 1")).text).toBe("[(1,)]");
    await slow.close();
    await (await sqlite.open(rows[5]!)).close();
    // Assess
    expect(together).toBe(2);
    expect(afterReuse).toBe(2); // one of the two came back (maxIdle 1) and served the third rollout
    expect(afterLimit).toBe(3); // …and ended after its second; the fourth took a new one
    expect(timedOut.errorClass).toBe("timeout");
    expect(afterTimeout).toBe(4); // the killed process was replaced for the rest of the rollout
    expect(sqlite.sandboxes.started).toBe(4); // the replacement came back and served the next rollout
  });
});
