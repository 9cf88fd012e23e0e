import { writeFile } from "node:fs/promises";
import { z } from "zod";
import { join } from "node:path";
import { ExperimentSummary, mergeSummaries } from "@harness-s/core/experiment";
import { ValidationError } from "@harness-s/core";
import { prepareOutDir } from "../out-dir.ts";
import { readJsonFile } from "@harness-s/envs";
import { renderReport } from "../report/markdown.ts";
import { printTable, writePlots } from "../report/output.ts";
import { PoolsFile } from "@harness-s/adapters/report";
import { mergeSweepParts } from "../sweeps.ts";
import { StartRow, startTableSection } from "../suite-lm/compare.ts";

async function readSummary(dir: string): Promise<ExperimentSummary> {
  const path = join(dir, "summary.json");
  const summary = await readJsonFile(path, ExperimentSummary);
  if (!summary) throw new ValidationError(path, ["no such file: is this an experiment's --out folder?"]);
  return summary;
}

/**
 * `harness-s report RUN... --out DIR`: pools runs of one configuration on disjoint seeds into one
 * summary (as if one run had all the seeds) and writes its summary.json, report.md and plots;
 * the runs' pools.json, router/re-anchoring sweeps and before-training tables (token-level runs)
 * are pooled too when every run has them.
 */
export async function reportCommand(runs: string[], out: string): Promise<ExperimentSummary> {
  const started = Date.now();
  await prepareOutDir(out);
  const summary = mergeSummaries(await Promise.all(runs.map(readSummary)));
  await writeFile(join(out, "summary.json"), JSON.stringify(summary, null, 2));
  const poolParts = await Promise.all(runs.map((dir) => readJsonFile(join(dir, "pools.json"), PoolsFile)));
  const pools = poolParts.every((p) => p !== undefined) ? Object.assign({}, ...poolParts) : undefined;
  if (pools) await writeFile(join(out, "pools.json"), JSON.stringify(pools, null, 2));
  const pairedSweeps = await mergeSweepParts(runs, out, (line) => process.stderr.write(`${line}\n`));
  const startParts = await Promise.all(
    runs.map((dir) => readJsonFile(join(dir, "start-table.json"), z.array(StartRow))),
  );
  const startRows = startParts.every((p) => p !== undefined)
    ? startParts.flat().sort((a, b) => a.seed - b.seed)
    : undefined;
  if (startRows) await writeFile(join(out, "start-table.json"), JSON.stringify(startRows, null, 2));
  await writeFile(
    join(out, "report.md"),
    renderReport(summary, undefined, { pools, pairedSweeps }) + startTableSection(startRows),
  );
  await writePlots(out, summary, undefined, pairedSweeps);
  printTable(summary, (Date.now() - started) / 1000, out);
  return summary;
}
