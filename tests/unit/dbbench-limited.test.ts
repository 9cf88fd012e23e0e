import { describe, expect, it } from "vitest";
import { limitSessions, type DbBenchRow, type SqlEngine } from "@harness-s/dbbench";

describe("limitSessions: DBBench rollouts at a bounded concurrency", () => {
  it("holds a rollout past the limit until one closes; a failed open frees its place", async () => {
    // Prepare: an engine that counts its open databases; the third open fails once.
    let open = 0;
    let most = 0;
    let opens = 0;
    const inner: SqlEngine = {
      name: "sqlite",
      open: async () => {
        if (++opens === 3) throw new Error("server gone");
        most = Math.max(most, ++open);
        return {
          engine: "sqlite",
          execute: async () => ({ text: "[]", kind: "rows", rowCount: 0 }),
          tablesHash: async () => "",
          close: async () => void open--,
        };
      },
      shutdown: async () => undefined,
      emptyDatabaseCycle: async () => undefined,
    };
    const engine = limitSessions(inner, 2);
    const row = {} as DbBenchRow;
    // Act
    const a = await engine.open(row);
    const b = await engine.open(row);
    let thirdOpened = false;
    const third = engine.open(row).then(
      (s) => {
        thirdOpened = true;
        return s;
      },
      () => "failed" as const,
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(thirdOpened).toBe(false);
    await a.close();
    await a.close(); // twice: released once
    expect(await third).toBe("failed");
    const fourth = await engine.open(row);
    // Assess
    expect(most).toBe(2);
    await Promise.all([b.close(), fourth.close()]);
    expect(open).toBe(0);
  });
});
