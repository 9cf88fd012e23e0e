import { HarnessSError } from "../errors.ts";
import { EvolutionFailedError } from "./errors.ts";
import { claimJob, LeaseWriter, lookAgainWhenLapsed } from "../util/leased-job.ts";
import { resendAfterLease } from "../messaging/resend.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import "./messages.ts"; // registers pool.evolve.requested
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
import { actionOf, callerTaskOf, type RolloutSpend } from "../callers/caller-rescue.ts";
import type { CallerPolicies } from "../dispatch/rollout-source.ts";
import type { Clock } from "../util/clock.ts";
import { consoleLogger, logFailure, type Logger } from "../util/logger.ts";
import { createRng, hash32 } from "../util/rng.ts";
import {
  EVOLUTION_ENDS,
  type EvolutionUsage,
  PoolEvolutionRecord,
  type PoolEvolutionStore,
} from "./evolution-record.ts";
import {
  POOL_EVOLUTION_LIMITS,
  evolutionSlotKey,
  plannedEvolutionRollouts,
  type PoolEvolveRequest,
} from "./evolve-request.ts";
import { callerRescueOf } from "./start-evolution.ts";

/**
 * What a proposer for a caller's environment is shown: its tools as documented, what no edit may quote, the events its
 * observations may carry.
 */
export interface CallerProposerContext {
  tools: readonly { name: string; description: string }[];
  leaks: LeakIndex;
  events: readonly string[];
}

/**
 * What the coordinator runs evolutions with: the job store, where the pool and its profiles go, the caller's policies,
 * the meter.
 */
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
  /** The coordinator's queue: a delivery under another attempt's lease asks to look again once it lapses. */
  lookAgainOn?: MessageQueue;
  logger?: Logger;
}

/**
 * The events a caller's environment reports through OpenEnv (its own, or the generic observer's) that a proposer may
 * aim at.
 */
const CALLER_EVENTS = [
  "start",
  "tool:ok",
  "error:tool",
  "error:*",
  "error:tool-call",
  "error:no-tool-call",
  "error:unknown-tool",
  "repeat:*",
];

/** A delivery under another attempt's lease (perhaps a dead one's): the job's message again once the lease lapses. */
function lookAgainLater(id: string, deps: PoolEvolutionWorkerDeps): Promise<void> {
  return lookAgainWhenLapsed(
    deps.evolutions,
    id,
    deps.clock,
    resendAfterLease(deps.lookAgainOn, {
      id,
      prefix: `pool-evolution:${id}`,
      type: "pool.evolve.requested",
      body: { evolutionId: id },
    }),
  );
}

/**
 * The coordinator's side of `pool.evolve.requested`: claims the job (a redelivery while it runs
 * is a no-op), runs directional evolution from the caller's H0 on its dev tasks (each rollout
 * sampled at its endpoint at the pinned version, in its environment), stores the frozen pool
 * under the job's id, owned by the key, with its initial profiles, and meters every attempt's
 * rollouts, tokens and time to the key and the job. A job that fails says why (its code and
 * message); one whose worker was lost is taken over after its lease and started again, at most
 * `POOL_EVOLUTION_LIMITS.attempts` times.
 */
export async function runPoolEvolution(
  id: string,
  deps: PoolEvolutionWorkerDeps,
): Promise<PoolEvolutionRecord | "duplicate"> {
  const leaseMs = deps.leaseMs ?? 16 * 60_000;
  const claimed = await claimJob(deps.evolutions, id, "pool evolution", deps.clock, leaseMs);
  if (claimed === "duplicate") {
    await lookAgainLater(id, deps);
    return claimed;
  }
  const record: PoolEvolutionRecord = {
    ...claimed,
    usage: { ...claimed.usage },
    attempts: claimed.attempts + 1,
    error: undefined,
  };
  const started = deps.clock.now();
  const metered = new SliceMeter(record, deps);
  // Each write after every earlier one (progress is saved as it moves), carrying the compute time so far.
  const writer = new LeaseWriter(record, {
    store: deps.evolutions,
    clock: deps.clock,
    leaseMs,
    snapshot: (r) => PoolEvolutionRecord.parse(r),
    stamp: (r, now) => {
      r.usage.computeMs = claimed.usage.computeMs + (now - started);
    },
  });
  const save = writer.save;
  const watch = new EvolutionWatch(record, deps, save, metered);
  try {
    if (record.attempts > POOL_EVOLUTION_LIMITS.attempts)
      throw new EvolutionFailedError(`gave up after ${POOL_EVOLUTION_LIMITS.attempts} attempts (a worker lost each)`);
    await save({
      progress: {
        ...record.progress,
        label: `attempt ${record.attempts}: measuring H0 on ${record.request.devTasks.length} dev tasks`,
      },
    });
    const { result, proposer } = await evolveFor(record, deps, watch).finally(() => watch.stop());
    const pool = await storePool(record, result, proposer, deps);
    const outcome = {
      proposer,
      h0Failures: result.h0Failures,
      repairSets: result.repairSets,
      candidates: result.candidates.length,
      ...(result.stopped ? { stopped: result.stopped } : {}),
    };
    await save({
      status: "done",
      pool: { id: pool.id, version: pool.version, siblings: pool.siblings.length },
      outcome,
      progress: { ...record.progress, label: "done" },
    });
  } catch (err) {
    await writer.settled();
    if (watch.cancelled)
      await save({
        status: "cancelled",
        progress: { ...record.progress, label: `cancelled by its key after ${record.usage.rollouts} rollouts` },
      });
    else {
      const error = {
        code: err instanceof HarnessSError ? err.code : "EVOLUTION_FAILED",
        message: (err instanceof Error ? err.message : String(err)).slice(0, 2_000),
      };
      await save({ status: "failed", error, progress: { ...record.progress, label: "failed" } });
    }
  } finally {
    watch.stop();
  }
  await metered.rest();
  if (EVOLUTION_ENDS.includes(record.status))
    await deps.meter
      ?.releaseSlot(evolutionSlotKey(record.keyId))
      .catch(logFailure(deps.logger ?? consoleLogger, `releasing ${record.keyId}'s evolution slot`));
  return record;
}

/**
 * How often a running evolution asks whether its key cancelled it, and saves its progress and meters what it spent
 * since.
 */
export const EVOLUTION_SLICE_MS = 2_000;

/** Thrown into a running evolution's next rollout once its key cancelled it. */
class EvolutionCancelled extends Error {}

/**
 * A running evolution's clock: every {@link EVOLUTION_SLICE_MS} it asks whether its key cancelled
 * it (then the next rollout stops it), saves its progress (what it is measuring, rollouts so far)
 * and meters what it spent since the last slice.
 */
class EvolutionWatch {
  cancelled: boolean;
  phase = "measuring H0";
  private stopped = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly record: PoolEvolutionRecord,
    private readonly deps: PoolEvolutionWorkerDeps,
    private readonly save: (patch: Partial<PoolEvolutionRecord>) => Promise<void>,
    private readonly metered: SliceMeter,
  ) {
    this.cancelled = record.cancelRequested === true;
    this.timer = setInterval(() => void this.tick(), EVOLUTION_SLICE_MS);
    this.timer.unref?.();
  }

  /** Refuses a rollout once cancelled: the evolution ends there. */
  check(): void {
    if (this.cancelled) throw new EvolutionCancelled(`evolution ${this.record.id} cancelled by its key`);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const log = logFailure(this.deps.logger ?? consoleLogger, `evolution ${this.record.id}`);
    if (await this.deps.evolutions.cancelRequested(this.record.id).catch(log)) this.cancelled = true;
    const planned = plannedEvolutionRollouts(this.record.request);
    if (this.stopped) return; // ended while the cancel was asked: its last save stands
    await this.save({
      progress: {
        ...this.record.progress,
        label: `${this.phase}: ${this.record.usage.rollouts} of at most ${planned} rollouts`,
      },
    }).catch(log);
    await this.metered.slice();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}

/** What an evolution spent, metered to its key and job as it goes (each slice's new part), and the rest at its end. */
class SliceMeter {
  private metered: EvolutionUsage;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly record: PoolEvolutionRecord,
    private readonly deps: PoolEvolutionWorkerDeps,
  ) {
    this.metered = { ...record.usage };
  }

  /** Meters what was spent since the last slice (one write in flight at a time). */
  slice(): Promise<void> {
    this.inFlight = this.inFlight.then(() => this.meterNew());
    return this.inFlight;
  }

  /** Meters what is left at the attempt's end, after any slice in flight. */
  rest(): Promise<void> {
    return this.slice();
  }

  private async meterNew(): Promise<void> {
    const now = { ...this.record.usage };
    const used = Object.fromEntries(
      Object.entries(now).map(([k, v]) => [k, v - this.metered[k as keyof EvolutionUsage]]),
    );
    if (Object.values(used).every((v) => v === 0)) return;
    this.metered = now;
    await this.deps.meter
      ?.add(this.record.keyId, used, { jobId: this.record.id })
      .catch(logFailure(this.deps.logger ?? consoleLogger, `metering pool evolution ${this.record.id}`));
  }
}

/**
 * Runs evolution for the job: H0, the dev tasks as the caller's environment serves them, each rollout at the caller's
 * endpoint (none once cancelled).
 */
async function evolveFor(record: PoolEvolutionRecord, deps: PoolEvolutionWorkerDeps, watch: EvolutionWatch) {
  const req = record.request;
  const spend = (s: RolloutSpend) => {
    record.usage.policyTokens += s.policyTokens;
    record.usage.policyMs += s.policyMs;
    record.usage.environmentMs += s.environmentMs;
  };
  const runners = new Map<string, RolloutRunner>();
  for (const task of req.devTasks)
    runners.set(
      task.id,
      await deps.callers.runner(
        { kind: "caller", ...callerRescueOf(req, task), keyId: record.keyId, weightVersion: record.weightVersion },
        spend,
      ),
    );
  const proposer = (deps.proposer ?? (() => mutationProposer))(proposerContext(req));
  const e = req.evolution;
  const config = EvolutionConfig.parse({
    ...e,
    poolSize: e.poolSize,
    maxPerDirection: Math.max(1, Math.ceil(e.poolSize / e.directions.length)),
  });
  const result = await evolvePool(config, {
    base: parseHarnessSpec({
      id: "h0",
      description: "the caller's H0: its system text and tools",
      budget: { maxTurns: req.maxTurns },
      provenance: { direction: "base", proposer: "caller" },
    }),
    devTasks: req.devTasks.map(callerTaskOf),
    runRollout: async (task, spec, seed) => {
      watch.check();
      record.usage.rollouts++;
      return runners.get(task.id)!(task, spec, seed);
    },
    proposer,
    vocabulary: (family) => ({ tools: familyTools(req, family), facts: [], roles: {} }),
    rng: createRng(hash32(record.id)),
    onProgress: (done, total) => {
      watch.phase = `round ${done + 1} of ${total} (${done} done)`;
      record.progress = { done, total, label: `${watch.phase}: ${record.usage.rollouts} rollouts` };
    },
  });
  return { result, proposer: proposer.id };
}

/** The action names of a family's dev tasks' tools (the committing one is `submit`). */
const familyTools = (req: PoolEvolveRequest, family: string): string[] => [
  ...new Set(req.devTasks.filter((t) => t.family === family).flatMap((t) => t.tools.map(actionOf))),
];

/**
 * What the proposer sees of the caller's environment, and what it may never quote: the dev tasks' ids and reset values.
 */
function proposerContext(req: PoolEvolveRequest): CallerProposerContext {
  const tools = new Map(req.devTasks.flatMap((t) => t.tools.map((tool) => [tool.name, tool.description] as const)));
  const leaks = new LeakIndex(req.devTasks.map((t) => ({ taskId: t.id, secrets: Object.values(t.reset).map(String) })));
  return { tools: [...tools].map(([name, description]) => ({ name, description })), leaks, events: CALLER_EVENTS };
}

/**
 * The frozen pool under the job's id, the key's own, with its initial profiles (what evolution measured of each
 * harness).
 */
async function storePool(
  record: PoolEvolutionRecord,
  result: EvolutionResult,
  proposer: string,
  deps: PoolEvolutionWorkerDeps,
): Promise<HarnessPool> {
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
  const pool: HarnessPool = {
    ...createPool(record.id, result.pool.base, result.pool.siblings, notes),
    owner: record.keyId,
  };
  await deps.pools.put(pool);
  for (const profile of Object.values(result.initialProfiles)) await deps.profiles.put(pool.id, profile);
  return pool;
}
