import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseOrThrow } from "@harness-s/core";
import { OpenAiToolPolicy, boundedOpenAi } from "@harness-s/adapters/llm";
import {
  DBBENCH_SYSTEM,
  openEngine,
  dbbenchHarnesses,
  dbbenchTools,
  evalAgent,
  loadSplit,
  parseArgumentsPy,
  renderDbEvalReport,
  verifyGold,
} from "@harness-s/dbbench";
import { EvalOptions, VerifyOptions } from "./dbbench-options.ts";
import { prepareOutDir } from "../out-dir.ts";
import { createProgress } from "../progress.ts";

/** `harness-s dbbench verify`: replays the gold through the full environment and evaluator. */
export async function dbbenchVerifyCommand(input: Record<string, unknown>): Promise<void> {
  const o = parseOrThrow(VerifyOptions, input, "dbbench verify options");
  const rows = await loadSplit(o.data, o.split);
  const engine = await openEngine(o);
  try {
    const bar = o.json ? undefined : createProgress(rows.length, `gold replay on ${o.engine}`);
    const report = await verifyGold(rows, engine, o.split, {
      concurrency: o.concurrency,
      onRow: (d) => bar?.update(d, `${d}/${rows.length} rows`),
    });
    bar?.stop();
    if (o.json) {
      console.log(
        JSON.stringify({
          engine: report.engine,
          split: report.split,
          mutations: report.mutations,
          selects: report.selects,
          unmatched: report.unmatched,
        }),
      );
      return;
    }
    console.log(`engine ${report.engine}, split ${report.split}`);
    console.log(`mutations (INSERT/UPDATE, table hash): ${report.mutations.matched} / ${report.mutations.total}`);
    console.log(`selects (answer normalisation):       ${report.selects.matched} / ${report.selects.total}`);
    for (const [type, c] of Object.entries(report.byType).sort(([a], [b]) => (a < b ? -1 : 1)))
      console.log(`  ${type.padEnd(17)} ${c.matched} / ${c.total}`);
    for (const d of report.details)
      console.log(`  unmatched ${d.id} (${d.type}): last output ${JSON.stringify(d.lastOutput.slice(0, 160))}`);
  } finally {
    await engine.shutdown();
  }
}

/**
 * `harness-s dbbench eval`: an OpenAI-compatible agent on a split, under one harness. Answers how
 * many rows errored (the model endpoint failed on them, as opposed to a wrong answer): the CLI
 * exits 1 when any did, after writing the summary.
 */
export async function dbbenchEvalCommand(
  input: Record<string, unknown>,
): Promise<{ rows: number; erroredRows: number }> {
  const o = parseOrThrow(EvalOptions, input, "dbbench eval options");
  const harness = dbbenchHarnesses.find((h) => h.id === o.harness)!;
  await prepareOutDir(o.out);
  const rows = (await loadSplit(o.data, o.split)).slice(0, o.limit);
  const system = o.systemFile ? await readFile(o.systemFile, "utf8") : DBBENCH_SYSTEM;
  const client = boundedOpenAi({
    baseURL: o.baseUrl,
    apiKey: o.apiKey,
    timeoutMs: o.timeoutSeconds * 1000,
    maxRetries: 2,
  });
  let tokens = 0;
  const policy = new OpenAiToolPolicy(client, {
    model: o.model,
    system,
    tools: dbbenchTools,
    temperature: o.temperature,
    logprobs: o.logprobs,
    parseArguments: parseArgumentsPy,
    onUsage: (u) => (tokens += u.promptTokens + u.completionTokens),
  });
  const engine = await openEngine(o);
  try {
    const bar = createProgress(rows.length, `${o.model} on ${o.split} under ${harness.id}`);
    let correct = 0;
    const summary = await evalAgent(rows, engine, harness, () => policy, {
      concurrency: o.concurrency,
      onRow: (d, r) => {
        if (r.success) correct++;
        bar.update(d, `${correct}/${d} correct`);
      },
    });
    bar.stop();
    await writeFile(
      join(o.out, "summary.json"),
      JSON.stringify({ model: o.model, baseUrl: o.baseUrl, split: o.split, tokens, ...summary }, null, 2),
    );
    await writeFile(
      join(o.out, "report.md"),
      renderDbEvalReport(summary, { model: o.model, baseUrl: o.baseUrl, split: o.split }),
    );
    console.log(
      `overall_cat_accuracy ${(100 * summary.overallCatAccuracy).toFixed(1)}%  accuracy ${(100 * summary.accuracy).toFixed(1)}%  failed rounds ${summary.failedRounds}  errored rows ${summary.erroredRows}  tokens ${tokens}`,
    );
    console.log(`summary.json and report.md in ${o.out}`);
    return { rows: rows.length, erroredRows: summary.erroredRows };
  } finally {
    await engine.shutdown();
  }
}
