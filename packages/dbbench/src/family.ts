import { z } from "zod";
import { createPool } from "@harness-s/core";
import {
  familyOptions,
  flag,
  int,
  registerFamily,
  url,
  type OpenRequest,
  type OpenedFamily,
  type ServedFamily,
} from "@harness-s/envs";
import { DBBENCH_SYSTEM, dbbenchTools, parseArgumentsPy } from "./agent.ts";
import { benchDbbench } from "./bench.ts";
import { BUNDLED_DATA_DIR, loadSplit, rowTask } from "./data.ts";
import { limitSessions } from "./engines/limited.ts";
import { openEngine } from "./engines/open.ts";
import { DbBenchEnvironment } from "./environment.ts";
import { DbEvolveOptions, dbbenchEvolve } from "./evolve.ts";
import { dbbenchExperimentBase, dbbenchPool } from "./experiment.ts";
import { dbbenchObserver } from "./gateway-observer.ts";
import { dbbenchH0, dbbenchSiblings } from "./harnesses.ts";
import { dbbenchReportSection } from "./report-section.ts";
import { readSplits } from "./splits.ts";

/** DBBench's flags in an experiment: the engine (MariaDB by default), the pool, the databases open at once. */
const experimentFlags = {
  engine: flag(z.enum(["mysql", "sqlite"]).default("mysql"), "<e>", "with --env dbbench: the SQL engine"),
  mysqlUrl: flag(url.default("mysql://root@127.0.0.1:3306"), "<url>", "with --env dbbench: the MySQL/MariaDB server"),
  pool: flag(
    z.string().min(1).optional(),
    "<file>",
    "with --env dbbench: a pool written by `evolve --env dbbench` (default the hand-written siblings)",
  ),
  dbConcurrency: flag(int(1, 256).default(8), "<n>", "with --env dbbench: rollout databases open at once"),
};
/** DBBench's flags when served: the engine (SQLite by default). */
const serveFlags = {
  engine: flag(z.enum(["mysql", "sqlite"]).default("sqlite"), "<e>", "with --env dbbench: the SQL engine"),
  mysqlUrl: flag(
    z.url().default("mysql://root@127.0.0.1:3306"),
    "<url>",
    "with --env dbbench and --engine mysql: the MySQL/MariaDB server",
  ),
};

const db = DbEvolveOptions.shape;
/** `evolve --env dbbench`'s own flags (an LLM proposer, the policy at an endpoint, budgets). */
const evolveFlags = {
  proposerUrl: flag(
    db.proposerUrl.optional(),
    "<url>",
    "dbbench: the proposer's OpenAI-compatible endpoint (key: HARNESS_S_PROPOSER_KEY)",
  ),
  proposerModel: flag(db.proposerModel.optional(), "<m>", "dbbench: the proposer's model"),
  policyUrl: flag(
    db.policyUrl.optional(),
    "<url>",
    "dbbench: the policy's OpenAI-compatible endpoint, e.g. a policy worker's /v1 (key: HARNESS_S_POLICY_KEY)",
  ),
  policyModel: flag(db.policyModel, "<m>", "dbbench: the model name the policy endpoint serves"),
  engine: flag(db.engine, "<e>", "dbbench: the SQL engine"),
  mysqlUrl: flag(db.mysqlUrl, "<url>", "dbbench: MySQL/MariaDB server"),
  maxCalls: flag(db.maxCalls, "<n>", "dbbench: proposer calls allowed in all"),
  maxRollouts: flag(db.maxRollouts, "<n>", "dbbench: rollouts allowed in all (H0's measurement included)"),
  rounds: flag(db.rounds, "<n>", "dbbench: rounds per direction"),
  candidates: flag(db.candidates, "<n>", "dbbench: proposals per round"),
  trials: flag(db.trials, "<n>", "dbbench: rollouts per dev row and candidate"),
  screen: flag(db.screen, "<n>", "dbbench: dev rows of the minibatch screen (GEPA-style) before the full dev set"),
  devTasks: flag(db.devTasks, "<n>", "dbbench: the first N dev rows only (smoke runs)"),
};

/**
 * DBBench for an experiment: the fixed splits on `--engine` (at most `--db-concurrency` databases open), the pool of
 * `--pool`.
 */
async function openDbbench(req: OpenRequest): Promise<OpenedFamily> {
  const o = familyOptions(experimentFlags, req);
  const engine = limitSessions(await openEngine(o), o.dbConcurrency);
  try {
    return {
      base: await dbbenchExperimentBase(engine, req.protocol, await dbbenchPool(o.pool)),
      reportSection: dbbenchReportSection,
      stop: () => engine.shutdown(),
    };
  } catch (err) {
    await engine.shutdown();
    throw err;
  }
}

/** DBBench served: the bundled dev and standard rows by id (resets draw from train), on `--engine`. */
async function serveDbbench(req: OpenRequest): Promise<ServedFamily> {
  const o = familyOptions(serveFlags, req);
  const rows = [...(await loadSplit(BUNDLED_DATA_DIR, "dev")), ...(await loadSplit(BUNDLED_DATA_DIR, "standard"))];
  const byId = new Map(rows.map((r) => [r.id, rowTask(r)]));
  const { train } = await readSplits(BUNDLED_DATA_DIR);
  const engine = await openEngine(o);
  const byAction = new Map(dbbenchTools.map((t) => [t.action, t]));
  return {
    env: new DbBenchEnvironment(rows, engine),
    tasks: { get: async (id) => byId.get(id) },
    resetTasks: train,
    describeTools: (actions) =>
      actions.map((a) => ({
        name: a,
        description: byAction.get(a)?.description ?? "",
        input_schema: byAction.get(a)?.parameters ?? {},
      })),
    submit: "submit",
    shutdown: () => engine.shutdown(),
  };
}

/**
 * The gateway on DBBench: every bundled row by id (the schema preview, the answer check), AgentBench's commit tool,
 * Python-style arguments.
 */
async function dbbenchGateway() {
  const rows = [...(await loadSplit(BUNDLED_DATA_DIR, "dev")), ...(await loadSplit(BUNDLED_DATA_DIR, "standard"))];
  return {
    observerFor: dbbenchObserver(new Map(rows.map((r) => [r.id, r]))),
    submitTool: "commit_final_answer",
    defaultFamily: "dbbench",
    parseArguments: parseArgumentsPy,
  };
}

export const dbbench = registerFamily({
  name: "dbbench",
  summary: "dbbench (AgentBench's SQL tasks, the fixed splits, on MariaDB or SQLite)",
  commands: ["experiment", "env-serve"],
  policy: "worker",
  system: DBBENCH_SYSTEM,
  tools: dbbenchTools,
  h0: dbbenchH0,
  siblings: dbbenchSiblings,
  flags: (command) => (command === "experiment" ? experimentFlags : serveFlags),
  open: openDbbench,
  runKey: (req) => {
    const o = familyOptions(experimentFlags, req);
    return { dbbench: { engine: o.engine, pool: o.pool ?? null } };
  },
  serve: serveDbbench,
  gateway: dbbenchGateway,
  servePool: () =>
    createPool("dbbench", dbbenchH0, dbbenchSiblings, {
      note: "DBBench siblings; no profiles until evidence is reported",
    }),
  // The command's flags that DBBench's evolution reads (`--out`, `--seed`, `--pool-size` and its own).
  evolve: {
    summary: "dbbench (an LLM proposer; the policy at --policy-url; dev rows only)",
    flags: evolveFlags,
    run: (options, io) =>
      dbbenchEvolve(Object.fromEntries(Object.entries(options).filter(([k]) => k in db)) as DbEvolveOptions, io),
  },
  bench: (options) => benchDbbench({ mysqlUrl: options.mysqlUrl as string | undefined }),
});
