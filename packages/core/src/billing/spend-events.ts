import type { EventLogger } from "../observability/events.ts";
import { type PriceList, costOfGoods } from "./cost-of-goods.ts";
import type { Usage, UsageMeter } from "./usage.ts";

/**
 * A meter that tells each write it made as one `usage.metered` event: the key, the job, and what
 * the write cost the deployment (`costOfGoodsUsd`, priced by `priceList` as the usage report prices
 * it). The stacks' spend metric sums that field from every function's log. A write that failed
 * tells nothing (its backlog tells it when it lands).
 *
 * @example
 * const meter = spendTellingMeter(new DynamoUsageMeter(doc, tables), events, priceList);
 */
export function spendTellingMeter(meter: UsageMeter, events: EventLogger, priceList: PriceList): UsageMeter {
  const tell = (keyId: string, used: Partial<Usage>, jobId?: string) => {
    const costOfGoodsUsd = costOfGoods(used, priceList).totalUsd;
    if (costOfGoodsUsd > 0) events.event({ event: "usage.metered", keyId, jobId, costOfGoodsUsd });
  };
  return {
    add: async (keyId, usage, opts) => {
      await meter.add(keyId, usage, opts);
      tell(keyId, usage, opts?.jobId);
    },
    addWithin: async (keyId, field, amount, limit) => {
      const added = await meter.addWithin(keyId, field, amount, limit);
      if (added) tell(keyId, { [field]: amount });
      return added;
    },
    get: (keyId) => meter.get(keyId),
    job: (jobId) => meter.job(jobId),
    byDay: (query) => meter.byDay(query),
    acquireSlot: (keyId, limit) => meter.acquireSlot(keyId, limit),
    releaseSlot: (keyId) => meter.releaseSlot(keyId),
    slotsHeld: (keyId) => meter.slotsHeld(keyId),
  };
}
