import { BackloggedMeter, mergeUsage, type CostUsage, type UsageMeter } from "@harness-s/core/billing";
import type { Payer } from "@harness-s/core/messaging";
import type { ConsumptionMeter } from "@harness-s/adapters/metering";

/**
 * Whose usage a message without a payer, and a poller's own calls, are metered to: the deployment's overhead (`#` is
 * never in a key's id).
 */
export const OVERHEAD_KEY = "#deployment";

/**
 * How a worker meters what each message cost: its AWS calls (instrumented clients) and its share of the invocation's
 * GB-seconds.
 */
export interface WorkerMetering {
  consumption: ConsumptionMeter;
  meter: Pick<UsageMeter, "add">;
  /** The function's configured memory, in GB (Lambda bills duration × memory). */
  memoryGb: number;
  log?: (line: string) => void;
}

/**
 * One meter write per payer per invocation: each record's consumption (measured in its own
 * scope) plus its share of the invocation's GB-seconds in proportion to the time it ran (a record
 * that waited a minute on its key's endpoint pays for that minute, not the quick ones beside it in
 * the batch; equal shares when no record's time is known), grouped by payer (key and job); what
 * no record was charged for (a poller's receives) goes to {@link OVERHEAD_KEY}. A failed write is
 * kept and sent with the next one (`BackloggedMeter`).
 *
 * @example
 * const bill = invocationBiller(metering);
 * await bill([{ payer: { keyId: "k1", jobId: "exp_1" }, used: { sqsRequests: 2 }, ms: 900 }], 1200);
 */
export function invocationBiller(m: WorkerMetering) {
  const meter = new BackloggedMeter(m.meter, m.log ?? ((line) => console.error(line)));
  return async (records: { payer?: Payer; used: CostUsage; ms?: number }[], elapsedMs: number): Promise<void> => {
    const gbSeconds = (elapsedMs / 1000) * m.memoryGb;
    const timed = records.reduce((n, r) => n + (r.ms ?? 0), 0);
    const shareOf = (r: { ms?: number }) =>
      timed > 0 ? (gbSeconds * (r.ms ?? 0)) / timed : gbSeconds / Math.max(1, records.length);
    const byPayer = new Map<string, { payer: Payer; used: CostUsage }>();
    for (const r of records) {
      const payer = r.payer ?? { keyId: OVERHEAD_KEY };
      const id = `${payer.keyId}\n${payer.jobId ?? ""}`;
      const before = byPayer.get(id)?.used;
      byPayer.set(id, {
        payer,
        used: mergeUsage(mergeUsage(before, r.used), { lambdaGbSeconds: shareOf(r) }) as CostUsage,
      });
    }
    const loose = m.consumption.takeUnattributed();
    if (Object.keys(loose).length) byPayer.set("overhead-loose", { payer: { keyId: OVERHEAD_KEY }, used: loose });
    for (const { payer, used } of byPayer.values())
      await meter.add(payer.keyId, used, payer.jobId ? { jobId: payer.jobId } : {}).catch(() => undefined);
  };
}
