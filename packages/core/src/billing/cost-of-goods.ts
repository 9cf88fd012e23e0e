import { z } from "zod";
import type { Usage } from "./usage.ts";

/**
 * Each provider unit's price in USD, declared once for the price list (what this deployment pays) and the tariff (what
 * a key is charged for what it consumed, passed through at no less than that).
 */
const UnitPrices = {
  /** Lambda, x86, per GB-second of duration and per invocation. */
  lambdaPerGbSecond: z.number().min(0).default(0.0000166667),
  lambdaPerRequest: z.number().min(0).default(0.0000002),
  /** DynamoDB on demand, per read and per write request unit. */
  dynamoPerReadUnit: z.number().min(0).default(0.125e-6),
  dynamoPerWriteUnit: z.number().min(0).default(0.625e-6),
  /** SQS standard queue, per request (each 64 KB chunk of a payload is one). */
  sqsPerRequest: z.number().min(0).default(0.4e-6),
  /** The policy endpoint's accelerator, per device second (one A10G, g5.xlarge on demand: 1.006 USD an hour). */
  gpuPerSecond: z
    .number()
    .min(0)
    .default(1.006 / 3600),
};
type UnitPrices = { [K in keyof typeof UnitPrices]: number };

/**
 * The tariff: what a key is charged — USD per rollout and per compute second (the service's own margin), each provider
 * unit it consumed at the tariff's unit prices ({@link tariffOver}: the deployment's price list, so a charge is never
 * below its cost of goods), and voters' spend at `voterMultiplier` × what each voter declared.
 */
export const Prices = z.object({
  perRollout: z.number().min(0).default(0.0002),
  perComputeSecond: z.number().min(0).default(0.00005),
  ...UnitPrices,
  voterMultiplier: z.number().min(1).default(1),
});
export type Prices = z.infer<typeof Prices>;

/**
 * What this deployment pays its providers per unit: the public on-demand prices of one region on
 * the date in `asOf` (check them before you bill with them; override any field by configuration).
 * Kept apart from the tariff a key is charged ({@link Prices}).
 */
export const PriceList = z
  .object({
    region: z.string().min(1).default("us-east-1"),
    asOf: z.string().min(1).default("2025-01-15"),
    ...UnitPrices,
  })
  .strict();
export type PriceList = z.infer<typeof PriceList>;

/** What each provider's part of some usage cost, in USD; voters at the price each voter declared. */
export const CostOfGoods = z.object({
  lambdaUsd: z.number(),
  dynamoUsd: z.number(),
  sqsUsd: z.number(),
  gpuUsd: z.number(),
  votersUsd: z.number(),
  totalUsd: z.number(),
});
export type CostOfGoods = z.infer<typeof CostOfGoods>;

/** A USD amount to the billionth, as every figure here is kept. */
export const roundUsd = (x: number) => Math.round(x * 1e9) / 1e9;

/** What some usage's provider units come to at unit prices, per provider (unrounded). */
function providerUsd(used: Partial<Usage>, prices: UnitPrices) {
  return {
    lambda: (used.lambdaGbSeconds ?? 0) * prices.lambdaPerGbSecond + (used.requests ?? 0) * prices.lambdaPerRequest,
    dynamo:
      (used.dynamoReadUnits ?? 0) * prices.dynamoPerReadUnit + (used.dynamoWriteUnits ?? 0) * prices.dynamoPerWriteUnit,
    sqs: (used.sqsRequests ?? 0) * prices.sqsPerRequest,
    gpu: (used.gpuSeconds ?? 0) * prices.gpuPerSecond,
  };
}

/**
 * The cost of goods of some usage at a price list; Lambda invocations are counted as the API
 * requests (a worker's invocations are in its GB-seconds only: their per-request price is noise).
 *
 * @example
 * costOfGoods({ dynamoWriteUnits: 2, sqsRequests: 1 }, PriceList.parse({})).totalUsd; // 0.00000165
 */
export function costOfGoods(used: Partial<Usage>, prices: PriceList): CostOfGoods {
  const { lambda, dynamo, sqs, gpu } = providerUsd(used, prices);
  const voters = used.llmCostUsd ?? 0;
  return {
    lambdaUsd: roundUsd(lambda),
    dynamoUsd: roundUsd(dynamo),
    sqsUsd: roundUsd(sqs),
    gpuUsd: roundUsd(gpu),
    votersUsd: roundUsd(voters),
    totalUsd: roundUsd(lambda + dynamo + sqs + gpu + voters),
  };
}

/**
 * What some usage is charged at the tariff: rollouts and compute seconds, plus every provider unit it consumed at the
 * tariff's pass-through prices (so, at a tariff over the deployment's price list, never below its cost of goods: per
 * request, per run and per day alike, the charge being a sum over usage).
 */
export function chargeUsd(used: Partial<Usage>, t: Prices): number {
  // A record's stored tariff from before the pass-through fields has them at their defaults: its schema's `Prices`
  // fills them when the store reads it back.
  const own = (used.rollouts ?? 0) * t.perRollout + ((used.computeMs ?? 0) / 1000) * t.perComputeSecond;
  const { lambda, dynamo, sqs, gpu } = providerUsd(used, t);
  return roundUsd(own + lambda + dynamo + sqs + gpu + (used.llmCostUsd ?? 0) * t.voterMultiplier);
}

/**
 * The default tariff over a deployment's price list: each provider unit passed through at the list's price (a price
 * list above the defaults raises them), the service's own units at their defaults.
 */
export function tariffOver(list: PriceList): Prices {
  return Prices.parse(list); // the list's unit prices; its region and date are not the tariff's (dropped)
}

/** The cost-of-goods fields of usage: what the consumption meters measure. */
export const COST_FIELDS = [
  "lambdaGbSeconds",
  "dynamoReadUnits",
  "dynamoWriteUnits",
  "sqsRequests",
  "gpuSeconds",
  "llmTokens",
  "llmCostUsd",
  "sampledTokens",
  "trainedTokens",
  "generatedTokens",
] as const satisfies readonly (keyof Usage)[];
export type CostUsage = Partial<Pick<Usage, (typeof COST_FIELDS)[number]>>;

/** The UTC day (`YYYY-MM-DD`) an instant falls on: usage is kept per key and day. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** How much usage history one read returns: a longer period or more rows is a 400 (narrow it). */
export const USAGE_LIMITS = { maxDays: 366, maxRows: 50_000 } as const;

/** A calendar day: `2026-13-45` and `2026-02-30` are no day at all, said so (not measured as a period). */
const Day = z.iso.date({ message: "not a calendar day (YYYY-MM-DD, UTC)" });
const PERIOD = {
  from: Day.meta({ description: "first UTC day, YYYY-MM-DD" }),
  to: Day.meta({ description: "last UTC day, YYYY-MM-DD" }),
  granularity: z.literal("day").default("day"),
  /** Another key's usage (admin only); `*` every key's. */
  keyId: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: "another key's usage, or * for every key's (admin keys only)" }),
};
/** The period's own checks, once each day is a day (an invalid day is not also "after to" or "too long"). */
const periodChecks = <S extends z.ZodType<{ from: string; to: string }>>(schema: S) =>
  schema
    .refine((p) => p.from <= p.to, {
      message: "from must not be after to",
      path: ["from"],
      when: (r) => r.issues.length === 0,
    })
    .refine((p) => (Date.parse(p.to) - Date.parse(p.from)) / 86_400_000 < USAGE_LIMITS.maxDays, {
      message: `at most ${USAGE_LIMITS.maxDays} days`,
      path: ["to"],
      when: (r) => r.issues.length === 0,
    });

/** `GET /v1/usage` and its export: a period of whole UTC days, at most {@link USAGE_LIMITS}.maxDays. */
export const UsagePeriod = periodChecks(z.object(PERIOD).strict());
/** The formats the usage export writes. */
export const USAGE_FORMATS = ["jsonl", "csv"] as const;
/** `GET /v1/usage/export`: a {@link UsagePeriod} and the format (JSON lines by default). */
export const UsageExportQuery = periodChecks(
  z
    .object({
      ...PERIOD,
      format: z.enum(USAGE_FORMATS).default("jsonl").meta({ description: "jsonl (default) or csv" }),
    })
    .strict(),
);
export type UsageExportQuery = z.infer<typeof UsageExportQuery>;
/**
 * `GET /v1/usage`'s query: nothing (the key's totals) or a whole {@link UsagePeriod} (by day); each
 * parameter is documented as optional since the totals need none.
 */
export const UsageRequestQuery = z.object(PERIOD).partial().strict();
export type UsagePeriod = z.infer<typeof UsagePeriod>;

/** Where a job's usage is kept beside the keys' (`#` never occurs in a key's id). */
export function jobUsageKey(jobId: string): string {
  return `job#${jobId}`;
}

/** Usage rows in (key, day) order. */
export function byKeyAndDay(a: { keyId: string; day: string }, b: { keyId: string; day: string }): number {
  return a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : a.day < b.day ? -1 : a.day > b.day ? 1 : 0;
}

/** What a job was billed so far: the usage metered under it, its cost of goods and its charge at its tariff. */
export const JobBill = z.object({
  usage: z.record(z.string(), z.number()),
  costOfGoods: CostOfGoods,
  chargeUsd: z.number(),
});
export type JobBill = z.infer<typeof JobBill>;

/** {@link JobBill} of the usage metered under a job. */
export const jobBill = (usage: Usage, tariff: Prices, priceList: PriceList): JobBill => ({
  usage: { ...usage },
  costOfGoods: costOfGoods(usage, priceList),
  chargeUsd: chargeUsd(usage, tariff),
});
