import { HarnessPool, type Protocol } from "@harness-s/core";
import { givenPool } from "@harness-s/core/evolution";
import { familyPool, readJsonFile, workerOnlyBase, type OpenedFamily } from "@harness-s/envs";
import { DbBenchEnvironment } from "./environment.ts";
import { dbbenchH0, dbbenchSiblings } from "./harnesses.ts";
import type { SqlEngine } from "./engines/engine.ts";
import { BUNDLED_DATA_DIR } from "./data.ts";
import { dbbenchTaskSets } from "./splits.ts";

/** The pool an experiment routes between: an evolved one from `evolve --env dbbench`, or the hand-written siblings. */
export async function dbbenchPool(file?: string): Promise<HarnessPool> {
  if (!file)
    return familyPool(
      { name: "dbbench", h0: dbbenchH0, siblings: dbbenchSiblings },
      "hand-written DBBench siblings (the reference pool)",
    );
  const pool = await readJsonFile(file, HarnessPool);
  if (!pool) throw new Error(`no pool file ${file}`);
  return pool;
}

/**
 * DBBench as an experiment's environment (before a worker's policies are put in): the fixed
 * splits of the protocol (held-out rows only in the evaluation slot, none under validation),
 * every rollout on a fresh database of `engine`, the same pool for every seed (its initial
 * profiles are measured with the token policy on dev by the worker's setup).
 *
 * @example
 * const base = await dbbenchExperimentBase(engine, "test", await dbbenchPool());
 */
export async function dbbenchExperimentBase(
  engine: SqlEngine,
  protocol: Protocol,
  pool: HarnessPool,
): Promise<OpenedFamily["base"]> {
  const sets = await dbbenchTaskSets(BUNDLED_DATA_DIR, protocol);
  return workerOnlyBase("DBBench", new DbBenchEnvironment(sets.rows, engine), sets, givenPool(pool));
}
