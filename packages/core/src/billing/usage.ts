import { z } from "zod";

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
  /**
   * Tokens a caller's rescue rollouts sampled at the caller's policy (prompt and completion), the time they waited on
   * it, and the time they spent in the caller's environment.
   */
  policyTokens: z.number().int().min(0),
  policyMs: z.number().min(0).default(0),
  environmentMs: z.number().min(0),
  /**
   * Cost of goods as measured where it was spent: function time × configured memory, DynamoDB capacity units as the SDK
   * reported them, SQS requests (per 64 KB chunk), policy-endpoint device seconds.
   */
  lambdaGbSeconds: z.number().min(0),
  dynamoReadUnits: z.number().min(0),
  dynamoWriteUnits: z.number().min(0),
  sqsRequests: z.number().int().min(0),
  gpuSeconds: z.number().min(0),
  /**
   * Tokens this deployment's own policy endpoint sampled (each turn's appended prompt and its completion) and trained
   * on (each update's sequences × epochs) for experiments.
   */
  sampledTokens: z
    .number()
    .int()
    .min(0)
    .default(0)
    .meta({ description: "tokens this deployment's policy endpoint sampled for experiments" }),
  trainedTokens: z
    .number()
    .int()
    .min(0)
    .default(0)
    .meta({ description: "tokens this deployment's policy endpoint trained on for experiments" }),
  /** Of `sampledTokens`, those the model generated (completions): what its device time goes with (decoding). */
  generatedTokens: z
    .number()
    .int()
    .min(0)
    .default(0)
    .meta({ description: "of sampledTokens, the completion tokens the model generated" }),
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
  sampledTokens: 0,
  trainedTokens: 0,
  generatedTokens: 0,
};

/** One key's usage on one UTC day (`YYYY-MM-DD`): what `GET /v1/usage` lists and the export writes. */
export const UsageDay = z.object({
  keyId: z.string().min(1),
  day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  usage: Usage,
});
export type UsageDay = z.infer<typeof UsageDay>;

/** Which days of usage to read: one key's, or every key's (`keyId` absent: admin only), `from`..`to` inclusive. */
export interface UsageQuery {
  keyId?: string;
  from: string;
  to: string;
}

/**
 * Where an add is also counted (`jobId`: under that job too), and `once`: an id it is metered under at most once (a
 * rollout slot's spend, `<job>:<index>`: a redelivered slot that finishes again adds nothing).
 */
export interface MeterOptions {
  jobId?: string;
  once?: string;
}

/** Metering for pay-per-use: adds usage atomically to the key's totals and to its day, in one write. */
export interface UsageMeter {
  add(keyId: string, usage: Partial<Usage>, opts?: MeterOptions): Promise<void>;
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

/**
 * Where a use-case reports what it used as it uses it (ballots, rollouts, LLM tokens and cost,
 * gateway turns): the API meters it to the request's key when the request ends, so no handler
 * computes usage of its own.
 */
/**
 * Where a use-case reports what a request used; `jobId` names the job the request started, whose bill (`UsageMeter.job`)
 * then counts it too (a rescue's rollouts, asked for by the request that started it).
 */
export type UsageSink = (used: Partial<Usage>, opts?: { jobId?: string }) => void;

/**
 * The meter rows quotes keep (their measured basis: `#quote-…`): they count again what payers were already metered for,
 * so they are nobody's to pay.
 */
export const QUOTE_ROW_PREFIX = "#quote-";
export const isQuoteBasisKey = (keyId: string): boolean => keyId.startsWith(QUOTE_ROW_PREFIX);
