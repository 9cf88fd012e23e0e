import { rolloutsIn, type ActionChoice, type Policy, type Rollout } from "@harness-s/core";
import { isMutation, rowTask, type DbBenchRow, type Split } from "./data.ts";
import { DbBenchEnvironment } from "./environment.ts";
import type { SqlEngine } from "./engines/engine.ts";
import { dbbenchH0 } from "./harnesses.ts";

/** A policy that plays a row's gold: the label SQL then commit (mutations), or commit the label (selects). */
export function goldPolicy(row: DbBenchRow): Policy {
  return {
    version: () => 0,
    async act(obs): Promise<ActionChoice> {
      const turn = (obs.history ?? []).filter((t) => t.role === "agent").length;
      if (isMutation(row) && turn < row.label.length)
        return { action: "execute_sql", args: { query: row.label[turn] }, logProb: 0 };
      return { action: "submit", args: { answers: isMutation(row) ? [] : row.label }, logProb: 0 };
    },
    update: () => Promise.reject(new Error("the gold policy does not learn")),
  };
}

/** Runs `fn` over `items` with at most `concurrency` at a time, keeping order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  return out;
}

export interface VerifyReport {
  engine: "mysql" | "sqlite";
  split: Split;
  mutations: { matched: number; total: number };
  selects: { matched: number; total: number };
  unmatched: string[];
  /** Matched / total per row type (INSERT, UPDATE, counting, …). */
  byType: Record<string, { matched: number; total: number }>;
  /** Per unmatched row: its type and the last tool output (an SQL error says why). */
  details: { id: string; type: string; lastOutput: string }[];
}

/**
 * Replays every row's gold through the full environment (fresh database, tools, evaluator).
 *
 * @example
 * const report = await verifyGold(rows, engine, "standard", { concurrency: 8 });
 */
export async function verifyGold(
  rows: readonly DbBenchRow[],
  engine: SqlEngine,
  split: Split,
  opts: { concurrency?: number; onRow?: (done: number) => void } = {},
): Promise<VerifyReport> {
  const env = new DbBenchEnvironment(rows, engine);
  let done = 0;
  const results = await mapLimit(rows, opts.concurrency ?? 8, async (row) => {
    const rollout: Rollout = await rolloutsIn(env, goldPolicy(row))(rowTask(row), dbbenchH0, 0);
    opts.onRow?.(++done);
    return { row, rollout };
  });
  const count = (xs: typeof results) => ({ matched: xs.filter((x) => x.rollout.success).length, total: xs.length });
  const failed = results.filter((r) => !r.rollout.success);
  return {
    engine: engine.name,
    split,
    mutations: count(results.filter((r) => isMutation(r.row))),
    selects: count(results.filter((r) => !isMutation(r.row))),
    unmatched: failed.map((r) => r.row.id),
    byType: results.reduce<VerifyReport["byType"]>((acc, r) => {
      acc[r.row.type[0]!] ??= { matched: 0, total: 0 };
      const t = acc[r.row.type[0]!]!;
      t.total++;
      if (r.rollout.success) t.matched++;
      return acc;
    }, {}),
    details: failed.map((r) => ({
      id: r.row.id,
      type: r.row.type[0]!,
      lastOutput:
        r.rollout.steps
          .map((s) => s.resultText ?? s.result)
          .filter((t) => t !== "submitted")
          .pop() ?? "",
    })),
  };
}
