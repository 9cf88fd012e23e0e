import { z } from "zod";
import { mean } from "@harness-s/core/metrics";
import { rolloutsIn, type HarnessSpec, type Policy, type Rollout } from "@harness-s/core";
import { MUTATION_TYPES, rowTask, type DbBenchRow } from "./data.ts";
import { DbBenchEnvironment } from "./environment.ts";
import type { SqlEngine } from "./engines/engine.ts";
import { mapLimit } from "./verify.ts";

export const DbEvalRow = z.object({
  id: z.string(),
  type: z.string(),
  success: z.boolean(),
  reward: z.number(),
  rounds: z.number(),
  failedRounds: z.number(),
  failureTags: z.array(z.string()),
  error: z.string().nullable(),
  logProbRecorded: z.boolean(),
});
export type DbEvalRow = z.infer<typeof DbEvalRow>;

export const DbEvalSummary = z.object({
  harness: z.string(),
  engine: z.string(),
  rows: z.number(),
  /** Accuracy per row type. */
  byType: z.record(z.string(), z.object({ correct: z.number(), total: z.number(), accuracy: z.number() })),
  /** AgentBench's overall_cat_accuracy: SELECT (all select types), INSERT and UPDATE, a third each. */
  overallCatAccuracy: z.number(),
  accuracy: z.number(),
  failedRounds: z.number(),
  erroredRows: z.number(),
  results: z.array(DbEvalRow),
});
export type DbEvalSummary = z.infer<typeof DbEvalSummary>;

const FAILED_ROUND = /^(error:|sql:error)/;

/**
 * Runs an agent over rows under one harness: a fresh database per rollout, `concurrency` at a
 * time. A row whose rollout throws (a model server down, a timeout) is a failure with its error
 * recorded; the run goes on.
 *
 * @example
 * const summary = await evalAgent(rows, engine, dbbenchH0, () => policy, { concurrency: 8 });
 */
export async function evalAgent(
  rows: readonly DbBenchRow[],
  engine: SqlEngine,
  harness: HarnessSpec,
  policyFor: (row: DbBenchRow) => Policy,
  opts: { concurrency?: number; seed?: number; onRow?: (done: number, row: DbEvalRow) => void } = {},
): Promise<DbEvalSummary> {
  const env = new DbBenchEnvironment(rows, engine);
  let done = 0;
  const results = await mapLimit(rows, opts.concurrency ?? 4, async (row): Promise<DbEvalRow> => {
    let rollout: Rollout | undefined;
    let error: string | null = null;
    try {
      rollout = await rolloutsIn(env, policyFor(row))(rowTask(row), harness, opts.seed ?? 0);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const result: DbEvalRow = {
      id: row.id,
      type: row.type[0]!,
      success: rollout?.success ?? false,
      reward: rollout?.reward ?? 0,
      rounds: rollout?.steps.length ?? 0,
      failedRounds: rollout?.steps.filter((s) => FAILED_ROUND.test(s.result)).length ?? 0,
      failureTags: rollout?.failureTags ?? ["rollout-error"],
      error,
      logProbRecorded: rollout?.steps.some((s) => s.logProb !== 0) ?? false,
    };
    opts.onRow?.(++done, result);
    return result;
  });
  const byType: DbEvalSummary["byType"] = {};
  for (const r of results) {
    byType[r.type] ??= { correct: 0, total: 0, accuracy: 0 };
    const t = byType[r.type]!;
    t.total++;
    if (r.success) t.correct++;
  }
  for (const t of Object.values(byType)) t.accuracy = t.correct / t.total;
  return {
    harness: harness.id,
    engine: engine.name,
    rows: results.length,
    byType,
    overallCatAccuracy: overallCatAccuracy(byType),
    accuracy: results.length ? mean(results.map((x) => (x.success ? 1 : 0))) : 0,
    failedRounds: results.reduce((n, r) => n + r.failedRounds, 0),
    erroredRows: results.filter((r) => r.error !== null).length,
    results,
  };
}

/**
 * AgentBench's overall_cat_accuracy from per-type counts: SELECT rows (every type but the
 * mutations) pooled, INSERT and UPDATE, a third each; a category without rows is left out.
 *
 * @example
 * overallCatAccuracy({ counting: { correct: 1, total: 2 }, INSERT: { correct: 1, total: 1 } }); // 0.75
 */
export function overallCatAccuracy(byType: Readonly<Record<string, { correct: number; total: number }>>): number {
  const pooled = (keep: (type: string) => boolean) =>
    Object.entries(byType)
      .filter(([t]) => keep(t))
      .reduce((a, [, c]) => ({ correct: a.correct + c.correct, total: a.total + c.total }), { correct: 0, total: 0 });
  const cats = [
    pooled((t) => !(MUTATION_TYPES as readonly string[]).includes(t)),
    pooled((t) => t === "INSERT"),
    pooled((t) => t === "UPDATE"),
  ].filter((c) => c.total > 0);
  return cats.length ? mean(cats.map((c) => c.correct / c.total)) : 0;
}

/** A Markdown report of one evaluation. */
export function renderDbEvalReport(s: DbEvalSummary, meta: { model: string; baseUrl: string; split: string }): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const lines = [
    `# DBBench evaluation — ${meta.model} under ${s.harness}`,
    "",
    `Split \`${meta.split}\`, engine \`${s.engine}\`, ${s.rows} rows, model server ${meta.baseUrl}.`,
    "",
    `- overall_cat_accuracy (SELECT, INSERT, UPDATE a third each): **${pct(s.overallCatAccuracy)}**`,
    `- accuracy over rows: ${pct(s.accuracy)}`,
    `- failed rounds (malformed tool calls, unknown tools, SQL errors): ${s.failedRounds}`,
    `- rows whose rollout errored (model server, timeout): ${s.erroredRows}`,
    "",
    "| type | correct | total | accuracy |",
    "|---|---|---|---|",
    ...Object.entries(s.byType)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([t, v]) => `| ${t} | ${v.correct} | ${v.total} | ${pct(v.accuracy)} |`),
    "",
  ];
  const errors = s.results.filter((r) => r.error);
  if (errors.length) lines.push("## Errored rows", "", ...errors.slice(0, 20).map((r) => `- ${r.id}: ${r.error}`), "");
  return lines.join("\n");
}
