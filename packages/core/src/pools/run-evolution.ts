import { EvolutionFailedError, HarnessSError, NotFoundError } from "../errors.ts";
import type { UsageMeter } from "../billing/usage.ts";
import { EvolutionConfig, evolvePool, type EvolutionResult } from "../evolution/evolve.ts";
import { mutationProposer } from "../evolution/mutation-proposer.ts";
import { LeakIndex } from "../evolution/proposal.ts";
import type { Proposer } from "../evolution/proposer.ts";
import { createPool, type HarnessPool } from "../harness/pool.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import { parseHarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import type { ProfileStore } from "../profile/store.ts";
import { actionOf, callerTaskOf, type RolloutSpend } from "../rescue/caller-rescue.ts";
import type { CallerPolicies } from "../rescue/rollout-source.ts";
import type { Clock } from "../util/clock.ts";
import { consoleLogger, type Logger } from "../util/logger.ts";
import { createRng, hash32 } from "../util/rng.ts";
import { type EvolutionUsage, PoolEvolutionRecord, type PoolEvolutionStore } from "./evolution-record.ts";
import { POOL_EVOLUTION_LIMITS, type PoolEvolveRequest } from "./evolve-request.ts";
import { callerRescueOf } from "./start-evolution.ts";

/** What a proposer for a caller's environment is shown: its tools as documented, what no edit may quote, the events its observations may carry. */
export interface CallerProposerContext {
  tools: readonly { name: string; description: string }[];
  leaks: LeakIndex;
  events: readonly string[];
}

/** What the coordinator runs evolutions with: the job store, where the pool and its profiles go, the caller's policies, the meter. */
export interface PoolEvolutionWorkerDeps {
  evolutions: PoolEvolutionStore;
  pools: PoolStore;
  profiles: Pick<ProfileStore, "put">;
  callers: CallerPolicies;
  clock: Clock;
  meter?: UsageMeter;
  /** The LLM proposer where the deployment configures one; default the template (mutation) proposer. */
  proposer?: (context: CallerProposerContext) => Proposer;
  leaseMs?: number;
  logger?: Logger;
}

/** The events a caller's environment reports through OpenEnv (its own, or the generic observer's) that a proposer may aim at. */
const CALLER_EVENTS = ["start", "tool:ok", "error:tool", "error:*", "error:tool-call", "error:no-tool-call", "error:unknown-tool", "repeat:*"];

/**
 * The coordinator's side of `pool.evolve.requested`: claims the job (a redelivery while it runs
 * is a no-op), runs directional evolution from the caller's H0 on its dev tasks (each rollout
 * sampled at its endpoint at the pinned version, in its environment), stores the frozen pool
 * under the job's id, owned by the key, with its initial profiles, and meters every attempt's
 * rollouts, tokens and time to the key and the job. A job that fails says why (its code and
 * message); one whose worker was lost is taken over after its lease and started again, at most
 * `POOL_EVOLUTION_LIMITS.attempts` times.
 */
export async function runPoolEvolution(id: string, deps: PoolEvolutionWorkerDeps): Promise<PoolEvolutionRecord | "duplicate"> {
  const leaseMs = deps.leaseMs ?? 16 * 60_000;
  const claimed = await deps.evolutions.claim(id, deps.clock.now(), deps.clock.now() + leaseMs);
  if (!claimed) {
    if (!(await deps.evolutions.get(id))) throw new NotFoundError("pool evolution", id);
    return "duplicate";
  }
  const record: PoolEvolutionRecord = { ...claimed, usage: { ...claimed.usage }, attempts: claimed.attempts + 1, error: undefined };
  const before = { ...record.usage };
  const started = deps.clock.now();
  let persisted: Promise<void> = Promise.resolve();
  // Each write after every earlier one (progress is saved as rounds end): no stale overwrite.
  const save = (patch: Partial<PoolEvolutionRecord>): Promise<void> => {
    const now = deps.clock.now();
    Object.assign(record, patch, { updatedAt: now });
    record.usage.computeMs = before.computeMs + (now - started);
    record.leaseUntil = record.status === "running" ? now + leaseMs : undefined;
    const snapshot = PoolEvolutionRecord.parse(record);
    persisted = persisted.catch(() => undefined).then(() => deps.evolutions.save(snapshot));
    return persisted;
  };
  try {
    if (record.attempts > POOL_EVOLUTION_LIMITS.attempts) throw new EvolutionFailedError(`gave up after ${POOL_EVOLUTION_LIMITS.attempts} attempts (a worker lost each)`);
    await save({ progress: { ...record.progress, label: `attempt ${record.attempts}: measuring H0` } });
    const { result, proposer } = await evolveFor(record, deps, (done, total) => void save({ progress: { done, total, label: `round ${done} of ${total}` } }));
    const pool = await storePool(record, result, proposer, deps);
    const outcome = {
      proposer,
      h0Failures: result.h0Failures,
      repairSets: result.repairSets,
      candidates: result.candidates.length,
      ...(result.stopped ? { stopped: result.stopped } : {}),
    };
    await save({ status: "done", pool: { id: pool.id, version: pool.version, siblings: pool.siblings.length }, outcome, progress: { ...record.progress, label: "done" } });
  } catch (err) {
    const error = { code: err instanceof HarnessSError ? err.code : "EVOLUTION_FAILED", message: (err instanceof Error ? err.message : String(err)).slice(0, 2_000) };
    await persisted.catch(() => undefined);
    await save({ status: "failed", error, progress: { ...record.progress, label: "failed" } });
  }
  await meterAttempt(record, before, deps);
  return record;
}

/** Runs evolution for the job: H0, the dev tasks as the caller's environment serves them, each rollout at the caller's endpoint. */
async function evolveFor(record: PoolEvolutionRecord, deps: PoolEvolutionWorkerDeps, onProgress: (done: number, total: number) => void) {
  const req = record.request;
  const spend = (s: RolloutSpend) => {
    record.usage.policyTokens += s.policyTokens;
    record.usage.policyMs += s.policyMs;
    record.usage.environmentMs += s.environmentMs;
  };
  const runners = new Map<string, RolloutRunner>();
  for (const task of req.devTasks)
    runners.set(task.id, await deps.callers.runner({ kind: "caller", ...callerRescueOf(req, task), keyId: record.keyId, weightVersion: record.weightVersion }, spend));
  const proposer = (deps.proposer ?? (() => mutationProposer))(proposerContext(req));
  const e = req.evolution;
  const config = EvolutionConfig.parse({ ...e, poolSize: e.poolSize, maxPerDirection: Math.max(1, Math.ceil(e.poolSize / e.directions.length)) });
  const result = await evolvePool(config, {
    base: parseHarnessSpec({
      id: "h0",
      description: "the caller's H0: its system text and tools",
      budget: { maxTurns: req.maxTurns },
      provenance: { direction: "base", proposer: "caller" },
    }),
    devTasks: req.devTasks.map(callerTaskOf),
    runRollout: async (task, spec, seed) => {
      record.usage.rollouts++;
      return runners.get(task.id)!(task, spec, seed);
    },
    proposer,
    vocabulary: (family) => ({ tools: familyTools(req, family), facts: [], roles: {} }),
    rng: createRng(hash32(record.id)),
    onProgress,
  });
  return { result, proposer: proposer.id };
}

/** The action names of a family's dev tasks' tools (the committing one is `submit`). */
const familyTools = (req: PoolEvolveRequest, family: string): string[] => [...new Set(req.devTasks.filter((t) => t.family === family).flatMap((t) => t.tools.map(actionOf)))];

/** What the proposer sees of the caller's environment, and what it may never quote: the dev tasks' ids and reset values. */
function proposerContext(req: PoolEvolveRequest): CallerProposerContext {
  const tools = new Map(req.devTasks.flatMap((t) => t.tools.map((tool) => [tool.name, tool.description] as const)));
  const leaks = new LeakIndex(req.devTasks.map((t) => ({ taskId: t.id, secrets: Object.values(t.reset).map(String) })));
  return { tools: [...tools].map(([name, description]) => ({ name, description })), leaks, events: CALLER_EVENTS };
}

/** The frozen pool under the job's id, the key's own, with its initial profiles (what evolution measured of each harness). */
async function storePool(record: PoolEvolutionRecord, result: EvolutionResult, proposer: string, deps: PoolEvolutionWorkerDeps): Promise<HarnessPool> {
  if (result.pool.siblings.length === 0)
    throw new EvolutionFailedError(
      `no sibling repaired ${record.request.evolution.minRepairs} of H0's ${result.h0Failures.length} failing dev tasks (${result.candidates.length} candidates kept a round): more dev tasks, rounds or candidates may find one`,
    );
  const notes = {
    name: record.request.name ?? null,
    proposer,
    devTasks: record.request.devTasks.map((t) => t.id),
    evolutionRollouts: result.rolloutsSpent,
    weightVersion: record.weightVersion,
  };
  const pool: HarnessPool = { ...createPool(record.id, result.pool.base, result.pool.siblings, notes), owner: record.keyId };
  await deps.pools.put(pool);
  for (const profile of Object.values(result.initialProfiles)) await deps.profiles.put(pool.id, profile);
  return pool;
}

/** Bills the key and the job for what this attempt used. */
async function meterAttempt(record: PoolEvolutionRecord, before: EvolutionUsage, deps: PoolEvolutionWorkerDeps): Promise<void> {
  const u = record.usage;
  const used = {
    rollouts: u.rollouts - before.rollouts,
    policyTokens: u.policyTokens - before.policyTokens,
    policyMs: u.policyMs - before.policyMs,
    environmentMs: u.environmentMs - before.environmentMs,
    computeMs: u.computeMs - before.computeMs,
  };
  await deps.meter?.add(record.keyId, used, { jobId: record.id }).catch((err) => (deps.logger ?? consoleLogger).warn(`metering pool evolution ${record.id}: ${String(err)}`));
}
