import type { CommandDeclaration } from "../declare.ts";
import { dbbenchEval, dbbenchVerify } from "./dbbench.ts";
import { evolve } from "./evolve.ts";
import { experiment } from "./experiment.ts";
import { keysCreate, keysEvents, keysList, keysRevoke, keysRotate, keysShow, keysUpdate } from "./keys.ts";
import { confirm, report, tune } from "./runs.ts";
import { envServe, fixturesServe, policyServe, serve } from "./serve.ts";
import { suiteLmBuild, suiteLmCompare } from "./suite-lm.ts";
import { bench, envEval, policyWorker } from "./tools.ts";

/** Commands that only group subcommands (`suite-lm build`), with their summaries. */
export const COMMAND_GROUPS: Record<string, string> = {
  "suite-lm":
    "The suite LM: a small Llama model made here, warm-started on the embedded initial policy's episodes (no held-out task)",
  dbbench: "DBBench (AgentBench's database task) on real data and a real SQL server",
  keys: "API keys at a running API: issue, list, show, update, rotate, revoke, and each key's events",
};

/** Every command, in the order help lists them (a group where its first subcommand stands). */
export const COMMANDS: readonly CommandDeclaration[] = [
  experiment,
  confirm,
  report,
  tune,
  suiteLmBuild,
  suiteLmCompare,
  evolve,
  serve,
  keysCreate,
  keysList,
  keysShow,
  keysUpdate,
  keysRotate,
  keysRevoke,
  keysEvents,
  fixturesServe,
  envEval,
  envServe,
  bench,
  policyServe,
  policyWorker,
  dbbenchVerify,
  dbbenchEval,
] as readonly CommandDeclaration[];
