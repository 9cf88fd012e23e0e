import type { SqlEngine, SqlSession } from "./engine.ts";

/**
 * An engine that holds at most `limit` rollout databases open at once: a rollout past it waits
 * for one to close (the concurrency DBBench rollouts run at, whatever the trainer starts).
 *
 * @example
 * const engine = limitSessions(await MysqlEngine.start(), 8);
 */
export function limitSessions(engine: SqlEngine, limit: number): SqlEngine {
  let open = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    open--;
    waiting.shift()?.();
  };
  return {
    name: engine.name,
    async open(row) {
      while (open >= limit) await new Promise<void>((r) => waiting.push(r));
      open++;
      let session: SqlSession;
      try {
        session = await engine.open(row);
      } catch (err) {
        release();
        throw err;
      }
      let closed = false;
      const limited: SqlSession = {
        engine: session.engine,
        execute: (sql) => session.execute(sql),
        tablesHash: (tables) => session.tablesHash(tables),
        close: async () => {
          if (closed) return;
          closed = true;
          try {
            await session.close();
          } finally {
            release();
          }
        },
      };
      return limited;
    },
    shutdown: () => engine.shutdown(),
    emptyDatabaseCycle: () => engine.emptyDatabaseCycle(),
  };
}
