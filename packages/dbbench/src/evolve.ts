import { writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { EvolutionConfig, evolvePool, type EvolutionResult } from "@harness-s/core/evolution";
import { createPool, createRng, parseOrThrow, rolloutsIn } from "@harness-s/core";
import { OpenAiProposer, OpenAiToolPolicy, boundedOpenAi, type ProposerReport } from "@harness-s/adapters/llm";
import { int, plainIo, type FamilyIo } from "@harness-s/envs";
import { DBBENCH_SYSTEM, dbbenchTools, parseArgumentsPy } from "./agent.ts";
import { BUNDLED_DATA_DIR } from "./data.ts";
import type { SqlEngine } from "./engines/engine.ts";
import { openEngine } from "./engines/open.ts";
import { DbBenchEnvironment } from "./environment.ts";
import { dbbenchH0, dbbenchSiblings } from "./harnesses.ts";
import { dbbenchLeakIndex } from "./leak-secrets.ts";
import { dbbenchTaskSets } from "./splits.ts";

/** `evolve --env dbbench`'s options: an LLM proposer, the policy at an OpenAI-compatible endpoint, budgets. */
export const DbEvolveOptions = z.strictObject({
  out: z.string().min(1),
  proposerUrl: z.string().url(),
  proposerModel: z.string().min(1),
  policyUrl: z.string().url(),
  policyModel: z.string().min(1).default("policy"),
  engine: z.enum(["mysql", "sqlite"]).default("mysql"),
  mysqlUrl: z.string().url().default("mysql://root@127.0.0.1:3306"),
  /** LLM calls the proposer may make, and rollouts evolution may spend, in all. */
  maxCalls: int(1).default(40),
  maxRollouts: int(1).default(3_000),
  rounds: int(1).default(2),
  candidates: int(1).default(3),
  trials: int(1).default(2),
  screen: int(1).default(12),
  poolSize: int(1).default(6),
  seed: int(0).default(1),
  /** The first N dev rows only (smoke runs). */
  devTasks: int(2).optional(),
});
export type DbEvolveOptions = z.input<typeof DbEvolveOptions>;

/**
 * What `evolve --env dbbench` writes beside the pool: the budget and how it was spent, the proposer's report, each
 * candidate.
 */
export interface DbEvolutionReport {
  budget: { maxCalls: number; maxRollouts: number };
  rolloutsSpent: number;
  stopped: EvolutionResult["stopped"] | null;
  proposer: ProposerReport;
  h0Failures: string[];
  repairSets: Record<string, string[]>;
  candidates: { id: string; direction: string; repairs: string[]; breaks: string[]; kept: boolean }[];
  referencePool: string[];
}

/** The events the proposer may aim an edit at: what DBBench's environment and the harness emit. */
const PROPOSER_EVENTS = [
  "sql:error:syntax",
  "sql:error:unknown-column",
  "sql:error:unknown-table",
  "sql:error:*",
  "sql:rows",
  "sql:empty",
  "sql:ok",
  "gate:*",
  "error:tool-call",
  "error:no-tool-call",
] as const;

/**
 * `harness-s evolve --env dbbench`: directional evolution of DBBench's H0 with an LLM proposer,
 * measured with the policy at `policyUrl` (any OpenAI-compatible server, a policy worker's `/v1`)
 * on the dev rows only: the environment is given no other row, so evolution cannot touch a train
 * or held-out one. The budget (proposer calls, rollouts) is printed first and honoured.
 *
 * @example
 * await dbbenchEvolve({ out: "results/dbbench-pool.json", proposerUrl, proposerModel: "qwen2.5-72b", policyUrl });
 */
export async function dbbenchEvolve(
  input: DbEvolveOptions,
  deps: { engine?: SqlEngine } & Partial<Pick<FamilyIo, "log" | "progress" | "prepareOutDir">> = {},
): Promise<DbEvolutionReport> {
  const o = parseOrThrow(DbEvolveOptions, input, "evolve --env dbbench options");
  const log = deps.log ?? ((line: string) => console.log(line));
  const { progress, prepareOutDir } = { ...plainIo, ...deps };
  const sets = await dbbenchTaskSets(BUNDLED_DATA_DIR, "test");
  const devTasks = sets.dev.slice(0, o.devTasks ?? sets.dev.length);
  const devRows = sets.rows.filter((r) => devTasks.some((t) => t.id === r.id));
  const engine = deps.engine ?? (await openEngine({ engine: o.engine, mysqlUrl: o.mysqlUrl }));
  const env = new DbBenchEnvironment(devRows, engine);
  const client = (baseURL: string, key: string | undefined) =>
    boundedOpenAi({ baseURL, apiKey: key ?? "none", maxRetries: 1, timeoutMs: 120_000 });
  const policy = new OpenAiToolPolicy(client(o.policyUrl, process.env.HARNESS_S_POLICY_KEY), {
    model: o.policyModel,
    system: DBBENCH_SYSTEM,
    tools: dbbenchTools,
    parseArguments: parseArgumentsPy,
  });
  const proposer = new OpenAiProposer(client(o.proposerUrl, process.env.HARNESS_S_PROPOSER_KEY), {
    model: o.proposerModel,
    maxCalls: o.maxCalls,
    leaks: dbbenchLeakIndex(devRows),
    tools: dbbenchTools.map((t) => ({ name: t.name, description: t.description })),
    events: [...PROPOSER_EVENTS],
  });
  const config = EvolutionConfig.parse({
    rounds: o.rounds,
    candidatesPerRound: o.candidates,
    trials: o.trials,
    screenTasks: Math.min(o.screen, devTasks.length),
    maxRollouts: o.maxRollouts,
    poolSize: o.poolSize,
  });
  log(
    `budget: ${o.maxCalls} proposer calls (${o.proposerModel}), ${o.maxRollouts} rollouts; H0's own measurement takes ${devTasks.length * o.trials} (${devTasks.length} dev rows × ${o.trials})`,
  );
  const bar = progress(config.directions.length * config.rounds, "evolving DBBench's H0");
  let result: EvolutionResult;
  try {
    result = await evolvePool(config, {
      base: dbbenchH0,
      devTasks,
      runRollout: rolloutsIn(env, policy),
      proposer,
      vocabulary: () => ({
        tools: dbbenchTools.map((t) => t.action),
        facts: ["queried", "queried-empty", "mutated", "schema-inspected"],
        roles: {},
      }),
      rng: createRng(o.seed),
      onProgress: (done, total) =>
        bar.update(done, `${done}/${total} direction rounds; ${proposer.report.calls}/${o.maxCalls} calls`),
    });
  } finally {
    bar.stop();
    if (!deps.engine) await engine.shutdown();
  }
  const report = evolutionReport(o, result, proposer.report);
  await prepareOutDir(dirname(o.out));
  const pool = createPool("dbbench-evolved", result.pool.base, result.pool.siblings, result.pool.notes);
  await writeFile(o.out, JSON.stringify(pool, null, 2));
  await writeFile(`${o.out.replace(/\.json$/, "")}.evolution.json`, JSON.stringify(report, null, 2));
  logSpending(log, o, result, proposer.report, devTasks.length, report.referencePool);
  return report;
}

/** What `evolve --env dbbench` writes beside the pool, from the evolution's result and the proposer's report. */
function evolutionReport(
  o: z.output<typeof DbEvolveOptions>,
  result: EvolutionResult,
  proposer: ProposerReport,
): DbEvolutionReport {
  return {
    budget: { maxCalls: o.maxCalls, maxRollouts: o.maxRollouts },
    rolloutsSpent: result.rolloutsSpent,
    stopped: result.stopped ?? null,
    proposer,
    h0Failures: result.h0Failures,
    repairSets: result.repairSets,
    candidates: result.candidates.map((c) => ({
      id: c.spec.id,
      direction: c.spec.provenance.direction,
      repairs: c.repairs,
      breaks: c.breaks,
      kept: c.kept,
    })),
    referencePool: dbbenchSiblings.map((s) => s.id),
  };
}

/** Logs what the evolution spent, what the proposer had accepted and refused, each sibling's repairs, and the pool. */
function logSpending(
  log: (line: string) => void,
  o: z.output<typeof DbEvolveOptions>,
  result: EvolutionResult,
  proposer: ProposerReport,
  devRows: number,
  referencePool: readonly string[],
): void {
  const refused =
    Object.entries(proposer.refused)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ") || "none";
  log(
    `spent ${proposer.calls}/${o.maxCalls} calls and ${result.rolloutsSpent}/${o.maxRollouts} rollouts${result.stopped ? ` (stopped: ${result.stopped})` : ""}`,
  );
  log(
    `proposals accepted ${proposer.accepted}; refused: ${refused}; H0 fails ${result.h0Failures.length}/${devRows} dev rows`,
  );
  for (const s of result.pool.siblings)
    log(`  ${s.id}: repairs ${result.repairSets[s.id]!.length} (${s.provenance.hypothesis})`);
  log(`pool written to ${o.out} (the hand-written siblings stay the reference pool: ${referencePool.join(", ")})`);
}
