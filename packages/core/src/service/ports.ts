import { z } from "zod";
import { CallerRollout, type RolloutSpend } from "./caller-rescue.ts";
import type { HarnessPool } from "../harness/pool.ts";
import type { Profile, ProfileSet } from "../profile/profile.ts";
import type { RoutingDecision } from "../voting/router.ts";
import type { Ballot } from "../voting/ballot.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Envelope } from "./messages.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";

/** The longest reason a failed slot keeps (an endpoint's or environment's text is cut there). */
export const SLOT_REASON_CHARS = 500;

/**
 * A producer's view of a queue: validated envelopes in, at-least-once delivery to a worker. A
 * message with a payer carries its key as the tenant (SQS fair queues: one key's backlog does not
 * hold back another key's messages); `delaySeconds` keeps the messages invisible that long first.
 */
export interface MessageQueue {
  send(messages: Envelope[], opts?: { delaySeconds?: number }): Promise<void>;
}

/** Pools are immutable: `put` refuses a different pool under an existing id. */
export interface PoolStore {
  put(pool: HarnessPool): Promise<void>;
  get(id: string): Promise<HarnessPool | undefined>;
  list(): Promise<{ id: string; version: string; siblings: number }[]>;
}

/** Profiles of one pool's harnesses; `put` replaces one harness's profile. */
export interface ProfileStore {
  get(poolId: string): Promise<ProfileSet>;
  put(poolId: string, profile: Profile): Promise<void>;
}

/** Rollouts with their full trajectories, keyed by (job, index); writing an existing key keeps the first. */
export interface RolloutStore {
  put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate">;
  list(jobId: string): Promise<{ index: number; rollout: Rollout }[]>;
  has(jobId: string, index: number): Promise<boolean>;
  get(jobId: string, index: number): Promise<Rollout | undefined>;
  /** The stored ones among `indexes` (one round trip per 100 on DynamoDB). */
  getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>>;
}

/** Ballots cast by the vote worker, keyed by (ballot key, voter); the first write wins. */
export interface BallotStore {
  put(ballotKey: string, ballot: Ballot): Promise<"stored" | "duplicate">;
  get(ballotKey: string, voterId: string): Promise<Ballot | undefined>;
}

/** Where the dispatch worker gets the policy that samples a rollout (the GPU endpoint in the cloud). */
export interface PolicyEndpoints {
  /** A runner for `policyId`; refuses (throws) when the endpoint holds another `version`. */
  runner(policyId: string, version?: number): RolloutRunner;
}

/** Why a slot will never be stored: a stable code (an error code of this service's) and what happened, bounded. */
export const SlotFailure = z.object({ code: z.string().min(1).max(64).default("ROLLOUT_FAILED"), reason: z.string().max(SLOT_REASON_CHARS) });
export type SlotFailure = z.input<typeof SlotFailure>;

export const RescueJob = z.object({
  id: z.string().min(1),
  poolId: z.string().min(1),
  taskId: z.string().min(1),
  decisionId: z.string().min(1),
  chosen: z.array(z.string()).min(1),
  rolloutsPerHarness: z.number().int().min(1),
  expected: z.number().int().min(1),
  createdAt: z.number(),
  /** The API key that started it: only that key (or an admin key) may read it. */
  keyId: z.string().optional(),
  /** Rollout slots the dispatch worker gave up on: a failure that cannot succeed on retry, or a message gone to the DLQ. */
  failures: z.array(SlotFailure.extend({ index: z.number().int().min(0) })).optional(),
  /** A rescue with the caller's own policy and environment (its trajectories are token-level). */
  caller: CallerRollout.optional(),
  /** When its key cancelled it: slots not started by then are never run. */
  cancelledAt: z.number().optional(),
  /** What its rollouts have spent so far, failed or not (a caller rescue's budget is held against it). */
  spentPolicyTokens: z.number().int().min(0).optional(),
  spentEnvironmentMs: z.number().min(0).optional(),
  /** Time its rollouts spent waiting on the caller's policy endpoint. */
  spentPolicyMs: z.number().min(0).optional(),
});
export type RescueJob = z.infer<typeof RescueJob>;

export interface RescueJobStore {
  create(job: RescueJob): Promise<void>;
  get(id: string): Promise<RescueJob | undefined>;
  /** Records that slot `index` of job `id` will never be stored, and why; a no-op for an unknown job. */
  recordFailure(id: string, index: number, failure: SlotFailure): Promise<void>;
  /** Marks job `id` cancelled at `at` (the first cancel's time stays); a no-op for an unknown job. */
  cancel(id: string, at: number): Promise<void>;
  /** Adds what one of its rollouts spent (atomically: concurrent slots lose nothing); a no-op for an unknown job. */
  addSpend(id: string, spend: RolloutSpend): Promise<void>;
}

/**
 * Each key's rescue slots in flight: a rescue holds its slots until it ends (released when its end
 * is seen) or until its hold expires (a hold never outlives the longest a rescue's slots can take,
 * so one that is never released stops counting by itself).
 */
export interface RescueSlots {
  /** Holds `slots` of the key's `limit` for rescue `id` until `until`, counting only holds unexpired at `now`; false when they would pass the limit. */
  hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean>;
  /** Lets rescue `id`'s hold go (a no-op when it holds none). */
  release(keyId: string, id: string): Promise<void>;
  /** Slots the key's unexpired holds take at `now`. */
  held(keyId: string, now: number): Promise<number>;
}

/** Where the dispatch worker finds the task a rollout is for (the embedded suite, a benchmark's index). */
export interface TaskSource {
  get(taskId: string): Promise<Task | undefined>;
}

/**
 * Whether `key` may read a record owned by `ownerKeyId`: its owner, or an admin key; a record with
 * no owner (made inside a training run) is for admin keys only.
 */
export function visibleTo(ownerKeyId: string | undefined, key: { id: string; scopes: readonly string[] }): boolean {
  return key.scopes.includes("admin") || (ownerKeyId !== undefined && ownerKeyId === key.id);
}

/** Every routing decision, for audit. Writing the same id twice keeps the first. */
export interface DecisionStore {
  put(decision: RoutingDecision): Promise<void>;
  get(id: string): Promise<RoutingDecision | undefined>;
}

export const Scope = z.enum(["route", "gateway", "rescues", "experiments", "pools:read", "pools:write", "profiles:read", "profiles:write", "admin"]);
export type Scope = z.infer<typeof Scope>;

export const ApiKeyRecord = z.object({
  id: z.string().min(1),
  /** SHA-256 of the secret, hex; the secret itself is never stored. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  scopes: z.array(Scope).min(1),
  /** Requests allowed in total (pay-per-use quota); undefined = unlimited. */
  requestQuota: z.number().int().positive().optional(),
  /** What the key may spend in total, in USD at the tariff; a request quoted above what is left is a 402 before any work. */
  budgetUsd: z.number().positive().optional(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecord>;

export const Usage = z.object({
  requests: z.number().int().min(0),
  ballots: z.number().int().min(0),
  rollouts: z.number().int().min(0),
  llmTokens: z.number().int().min(0),
  /** What the panel's LLM voters cost, at each voter's price per token. */
  llmCostUsd: z.number().min(0),
  /** Model turns the Rank-1 gateway forwarded, and the tokens the model endpoint reported for them. */
  gatewayTurns: z.number().int().min(0),
  gatewayTokens: z.number().int().min(0),
  computeMs: z.number().min(0),
  /** Tokens a caller's rescue rollouts sampled at the caller's policy (prompt and completion), the time they waited on it, and the time they spent in the caller's environment. */
  policyTokens: z.number().int().min(0),
  policyMs: z.number().min(0).default(0),
  environmentMs: z.number().min(0),
  /** Cost of goods as measured where it was spent: function time × configured memory, DynamoDB capacity units as the SDK reported them, SQS requests (per 64 KB chunk), policy-endpoint device seconds. */
  lambdaGbSeconds: z.number().min(0),
  dynamoReadUnits: z.number().min(0),
  dynamoWriteUnits: z.number().min(0),
  sqsRequests: z.number().int().min(0),
  gpuSeconds: z.number().min(0),
});
export type Usage = z.infer<typeof Usage>;

export const zeroUsage: Usage = {
  requests: 0,
  ballots: 0,
  rollouts: 0,
  llmTokens: 0,
  llmCostUsd: 0,
  gatewayTurns: 0,
  gatewayTokens: 0,
  computeMs: 0,
  policyTokens: 0,
  policyMs: 0,
  environmentMs: 0,
  lambdaGbSeconds: 0,
  dynamoReadUnits: 0,
  dynamoWriteUnits: 0,
  sqsRequests: 0,
  gpuSeconds: 0,
};

/** One key's usage on one UTC day (`YYYY-MM-DD`): what `GET /v1/usage` lists and the export writes. */
export const UsageDay = z.object({ keyId: z.string().min(1), day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), usage: Usage });
export type UsageDay = z.infer<typeof UsageDay>;

/** Which days of usage to read: one key's, or every key's (`keyId` absent: admin only), `from`..`to` inclusive. */
export interface UsageQuery {
  keyId?: string;
  from: string;
  to: string;
}

export interface ApiKeyStore {
  put(key: ApiKeyRecord): Promise<void>;
  findByHash(hash: string): Promise<ApiKeyRecord | undefined>;
}

/** Metering for pay-per-use: adds usage atomically to the key's totals and to its day, in one write. */
export interface UsageMeter {
  add(keyId: string, usage: Partial<Usage>, opts?: { jobId?: string }): Promise<void>;
  get(keyId: string): Promise<Usage>;
  /** What the writes naming this job added (an experiment's actual usage, to set beside its quote). */
  job(jobId: string): Promise<Usage>;
  /** Usage by UTC day, in (key, day) order; at most `USAGE_LIMITS.maxRows` rows (a 400 past it: narrow the period). */
  byDay(query: UsageQuery): Promise<UsageDay[]>;
  /**
   * Adds `amount` to `field` only if the total stays at most `limit`, in one atomic step (two
   * concurrent callers can never both take the last unit); false when it would pass the limit.
   */
  addWithin(keyId: string, field: keyof Usage, amount: number, limit: number): Promise<boolean>;
  /** Takes one of the key's `limit` experiment slots atomically; false when all are taken. */
  acquireSlot(keyId: string, limit: number): Promise<boolean>;
  /** Gives one slot back (never below zero). */
  releaseSlot(keyId: string): Promise<void>;
  /** Slots the key holds now (experiments queued or running). */
  slotsHeld(keyId: string): Promise<number>;
}
