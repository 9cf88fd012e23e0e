import { createPool, HarnessPool, type Protocol } from "@harness-s/core";
import { givenPool } from "@harness-s/core/evolution";
import { statisticalVoters } from "@harness-s/core/voting";
import type { ExperimentDeps, SeedInstance } from "@harness-s/core/experiment";
import { BUNDLED_DATA_DIR, DBBENCH_SYSTEM, DbBenchEnvironment, dbbenchH0, dbbenchSiblings, dbbenchTaskSets, dbbenchTools, type SqlEngine } from "@harness-s/dbbench";
import { readJsonFile } from "./json-file.ts";
import type { TokenRendering } from "./worker-setup.ts";

/** DBBench at token level: AgentBench's rules as the system text, its two tools (the commit tool is the `submit` action). */
export const dbbenchRendering: TokenRendering = {
  system: DBBENCH_SYSTEM,
  toolSchemas: (tools) =>
    dbbenchTools
      .filter((t) => tools.includes(t.action))
      .map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } })),
  toolNames: Object.fromEntries(dbbenchTools.filter((t) => t.name !== t.action).map((t) => [t.action, t.name])),
  env: (base) => base,
};

/** The pool an experiment routes between: an evolved one from `evolve --env dbbench`, or the hand-written siblings. */
export async function dbbenchPool(file?: string): Promise<HarnessPool> {
  if (!file) return createPool("dbbench", dbbenchH0, dbbenchSiblings, { note: "hand-written DBBench siblings (the reference pool)" });
  const pool = await readJsonFile(file, HarnessPool);
  if (!pool) throw new Error(`no pool file ${file}`);
  return pool;
}

/**
 * DBBench as an experiment's environment (before a worker's policies are put in): the fixed
 * splits of the protocol (held-out rows only in the evaluation slot, none under validation),
 * every rollout on a fresh database of `engine`, the same pool for every seed (its initial
 * profiles are measured with the token policy on dev by `workerPolicySetup`).
 *
 * @example
 * const base = await dbbenchExperimentBase(engine, "test", await dbbenchPool());
 */
export async function dbbenchExperimentBase(engine: SqlEngine, protocol: Protocol, pool: HarnessPool): Promise<Omit<ExperimentDeps, "onProgress">> {
  const sets = await dbbenchTaskSets(BUNDLED_DATA_DIR, protocol);
  const instance: SeedInstance = {
    train: sets.train,
    dev: sets.dev,
    heldout: sets.heldout,
    evolution: givenPool(pool),
  };
  return {
    env: new DbBenchEnvironment(sets.rows, engine),
    createPolicy: () => {
      throw new Error("DBBench experiments train a worker's policy (--policy worker)");
    },
    voters: statisticalVoters,
    instance: async () => instance,
  };
}
