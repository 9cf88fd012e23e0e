import type { Context, MiddlewareHandler } from "hono";
import { requestUsage } from "@harness-s/core/access";
import { BackloggedMeter, type CostUsage, type Usage, type UsageSink, mergeUsage } from "@harness-s/core/billing";
import type { ApiDeps } from "../deps.ts";
import type { ApiEnv } from "../http.ts";

/** How long a failed usage write waits before its one retry within the request. */
export const METER_RETRY_MS = 100;

/** Adds to what this request is metered for when it ends (ballots, LLM tokens and cost). */
export function addUsage(c: Context, used: Partial<Usage>): void {
  c.set("used", mergeUsage((c as Context<ApiEnv>).get("used"), used));
}

/** The request's usage sink: what the use-case reports it used, metered to the request's key when the request ends. */
export const usageOf =
  (c: Context): UsageSink =>
  (used, opts) => {
    addUsage(c, used);
    if (opts?.jobId) (c as Context<ApiEnv>).set("usedFor", opts.jobId);
  };

/**
 * Meters each authorised request in one write when it ends, failed or not: the request (unless a
 * quota already counted it), what the handler used, its compute time (ms in the handler) and,
 * with `deps.consumption`, its cost of goods (GB-seconds, DynamoDB units, SQS requests).
 * Usage is bounded before it is written; a write that fails is tried once more, then kept and
 * sent with the key's next write (`BackloggedMeter`), and logged with what is owed: never dropped.
 */
export function meterRequest(deps: ApiDeps): MiddlewareHandler<ApiEnv> {
  const meter = new BackloggedMeter(deps.meter, (line) => console.error(line));
  return async (c, next) => {
    const started = performance.now();
    const consumed: CostUsage = {};
    try {
      await (deps.consumption ? deps.consumption.meter.within(consumed, next) : next());
    } finally {
      const key = c.get("meteredKey");
      if (key) {
        const computeMs = performance.now() - started;
        const lambdaGbSeconds = deps.consumption ? (computeMs / 1000) * deps.consumption.memoryGb : 0;
        const usage = requestUsage(key, mergeUsage(c.get("used"), { ...consumed, computeMs, lambdaGbSeconds }));
        const opts = c.get("usedFor") ? { jobId: c.get("usedFor") } : {};
        await meter
          .add(key.id, usage, opts)
          .catch(() => deps.clock.sleep(METER_RETRY_MS).then(() => meter.add(key.id, {}, opts).catch(() => undefined)));
      }
    }
  };
}
