import { z } from "zod";
import type { LeasedJobStore } from "../util/leased-job.ts";
import { JobBill, Prices, chargeUsd, jobBill, type PriceList } from "../billing/cost-of-goods.ts";
import type { Usage } from "../billing/usage.ts";
import { Quote } from "../billing/quote-schema.ts";
import { HarnessPool } from "../harness/pool.ts";
import { PoolEvolveRequest } from "./evolve-request.ts";

export const PoolEvolutionState = z.enum(["queued", "running", "done", "failed", "cancelled"]);
export type PoolEvolutionState = z.infer<typeof PoolEvolutionState>;

/**
 * What an evolution spent: rollouts, tokens sampled at the caller's policy and the time waited on it, time in the
 * caller's environment, the worker's own time.
 */
export const EvolutionUsage = z.object({
  rollouts: z.number().int().min(0),
  policyTokens: z.number().int().min(0),
  policyMs: z.number().min(0),
  environmentMs: z.number().min(0),
  computeMs: z.number().min(0),
});
export type EvolutionUsage = z.infer<typeof EvolutionUsage>;
export const zeroEvolutionUsage: EvolutionUsage = {
  rollouts: 0,
  policyTokens: 0,
  policyMs: 0,
  environmentMs: 0,
  computeMs: 0,
};

/**
 * What evolution found, once done: H0's failures on the dev tasks, each sibling's repairs, the proposer, why it stopped
 * early (if it did).
 */
export const EvolutionOutcome = z.object({
  proposer: z.string(),
  h0Failures: z.array(z.string()),
  repairSets: z.record(z.string(), z.array(z.string())),
  candidates: z.number().int().min(0),
  stopped: z.string().optional(),
});
export type EvolutionOutcome = z.infer<typeof EvolutionOutcome>;

/**
 * One pool evolution as a job: asked for by a key (its owner), claimed by the coordinator under
 * a lease, its progress, usage and outcome; `poolId` once the pool is stored (the job's own id).
 */
export const PoolEvolutionRecord = z.object({
  id: z.string().min(1),
  keyId: z.string().min(1),
  request: PoolEvolveRequest,
  /** The weights every rollout samples, pinned when the job was asked for. */
  weightVersion: z.number().int().min(0),
  status: PoolEvolutionState,
  createdAt: z.number(),
  updatedAt: z.number(),
  leaseUntil: z.number().optional(),
  attempts: z.number().int().min(0),
  progress: z.object({ done: z.number().int(), total: z.number().int(), label: z.string() }),
  /** Cumulative over attempts: every attempt's rollouts are metered and billed. */
  usage: EvolutionUsage,
  pool: z.object({ id: z.string(), version: z.string(), siblings: z.number().int() }).optional(),
  outcome: EvolutionOutcome.optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  quote: Quote.optional(),
  tariff: Prices.optional(),
  /**
   * Its key asked it to stop (`POST …/cancel` while it ran): it stops within seconds, keeping what it measured billed.
   */
  cancelRequested: z.boolean().optional(),
});
export type PoolEvolutionRecord = z.infer<typeof PoolEvolutionRecord>;

/** The states an evolution ends in: nothing changes it after. */
export const EVOLUTION_ENDS: readonly PoolEvolutionState[] = ["done", "failed", "cancelled"];

/** Pool evolution jobs: leased jobs the coordinator claims (see {@link LeasedJobStore}). */
export type PoolEvolutionStore = LeasedJobStore<PoolEvolutionRecord>;

/**
 * What `GET /v1/pools/evolutions/{id}` answers: state, progress, usage and charge so far, the
 * quote, the outcome and, once done, the frozen pool itself.
 */
export const PoolEvolutionStatus = PoolEvolutionRecord.pick({
  id: true,
  status: true,
  request: true,
  weightVersion: true,
  progress: true,
  attempts: true,
  usage: true,
}).extend({
  chargeUsd: z.number(),
  quote: Quote.nullable(),
  /**
   * What was metered under it so far (every provider unit: what its key is billed), its cost of goods and charge, to
   * set beside `quote`; null where the status was answered without reading the meter (its start, its cancel).
   */
  actual: JobBill.nullable(),
  outcome: EvolutionOutcome.nullable(),
  pool: HarnessPool.nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type PoolEvolutionStatus = z.infer<typeof PoolEvolutionStatus>;

/** A job as its status answers it (`pool`: the stored pool once done). */
export function poolEvolutionStatus(
  record: PoolEvolutionRecord,
  prices: Prices,
  pool?: HarnessPool,
  actual?: { usage: Usage; priceList: PriceList },
): PoolEvolutionStatus {
  return {
    id: record.id,
    status: record.status,
    request: record.request,
    weightVersion: record.weightVersion,
    progress: record.progress,
    attempts: record.attempts,
    usage: record.usage,
    chargeUsd: chargeUsd(record.usage, record.tariff ?? prices),
    quote: record.quote ?? null,
    actual: actual ? jobBill(actual.usage, record.tariff ?? prices, actual.priceList) : null,
    outcome: record.outcome ?? null,
    pool: pool ?? null,
    error: record.error ?? null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
