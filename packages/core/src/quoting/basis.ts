import { mergeUsage } from "../billing/metering.ts";
import type { CostUsage } from "../billing/cost-of-goods.ts";
import { zeroUsage, type UsageMeter } from "../billing/usage.ts";
import type { ExperimentRecord } from "../experiment/records.ts";
import { addJobToConfiguration } from "./quote-config.ts";
import { addJobToFit } from "./quote-fit.ts";
import { QUOTE_BASIS_KEY, QUOTE_RESCUE_KEYS, rescueRolloutsOf, trainingRolloutsOf } from "./quotes.ts";

/**
 * A finished run's actual usage (with what its last attempt has not billed yet) and rescue
 * rollouts join this deployment's measured basis for quotes (`requests` counts the jobs).
 */
export async function addToQuoteBasis(record: ExperimentRecord, meter: UsageMeter, unbilled: CostUsage): Promise<void> {
  const used = { ...zeroUsage, ...mergeUsage(await meter.job(record.id), unbilled) };
  await meter.add(QUOTE_BASIS_KEY, { ...used, requests: 1 });
  const rescue = rescueRolloutsOf(record.results);
  await addJobToFit(meter, used, rescue.extra);
  await addJobToConfiguration(meter, record.request, used, {
    training: trainingRolloutsOf(record.results),
    rescueTraining: rescue.training,
    rescueExtra: rescue.extra,
  });
  if (rescue.training > 0)
    await Promise.all([
      meter.add(QUOTE_RESCUE_KEYS.training, { rollouts: rescue.training }),
      meter.add(QUOTE_RESCUE_KEYS.extra, { rollouts: rescue.extra }),
    ]);
}

/**
 * The coordinator's hook for a run that ended done: it joins `meter`'s measured basis (see {@link addToQuoteBasis}).
 */
export const quoteBasisOn =
  (meter: UsageMeter) =>
  (record: ExperimentRecord, unbilled: CostUsage): Promise<void> =>
    addToQuoteBasis(record, meter, unbilled);
