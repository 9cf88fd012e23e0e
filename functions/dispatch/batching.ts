import { batchedLookups, coalescedAdds, singleFlight } from "@harness-s/core";
import type { SlotJobs } from "@harness-s/core/dispatch";
import type { RolloutSpend } from "@harness-s/core/callers";
import { mergeUsage, type MeterOptions, type Usage, type UsageMeter } from "@harness-s/core/billing";
import type { RolloutStore } from "@harness-s/core";

const sumSpend = (a: RolloutSpend, b: RolloutSpend): RolloutSpend => ({
  policyTokens: a.policyTokens + b.policyTokens,
  policyMs: a.policyMs + b.policyMs,
  environmentMs: a.environmentMs + b.environmentMs,
});

/**
 * The dispatch worker's stores as a batch of one rescue's slots uses them together: the slots of
 * one SQS batch (or ones running at once) share one read of their rescue's record
 * (`jobs.get` in flight), ask "stored already?" in one BatchGetItem per rescue (`rollouts.has`),
 * add a spend not tied to its slot to their rescue in one update and meter it to their key in one write (what
 * arrives while such a write is in flight goes in the next); a finished slot's spend, recorded once per slot, is a
 * write of its own. Every slot still awaits the write
 * that carried its part, so a spend is never lost or metered twice; a slot's rollout is stored
 * on its own (a conditional put: a redelivered slot stays a duplicate) as soon as it ends. A
 * shared request is metered to the first slot of its own group (the coalescers run it in that
 * slot's async context), never to one whose invocation has already been billed (slots of one
 * rescue in different invocations).
 */
export function batchedDispatchStores<D extends { rollouts: RolloutStore; jobs?: SlotJobs; meter?: UsageMeter }>(
  deps: D,
): D {
  const { rollouts, jobs, meter } = deps;
  const has = batchedLookups(async (jobId: string, indexes: number[]) => {
    const found = await rollouts.getMany(jobId, indexes);
    return new Map(indexes.map((i) => [i, found.has(i)]));
  }, false);
  const batchedRollouts: RolloutStore = {
    put: (jobId, index, rollout) => rollouts.put(jobId, index, rollout),
    list: (jobId) => rollouts.list(jobId),
    summaries: (jobId) => rollouts.summaries(jobId),
    has,
    get: (jobId, index) => rollouts.get(jobId, index),
    getMany: (jobId, indexes) => rollouts.getMany(jobId, indexes),
  };
  const batchedJobs: SlotJobs | undefined = jobs && {
    get: singleFlight(
      (id: string) => jobs.get(id),
      (id) => id,
    ),
    recordFailure: (id, index, failure) => jobs.recordFailure(id, index, failure),
    addSpend: (id, spend, slot) => (slot === undefined ? plainSpend!(id, spend) : jobs.addSpend(id, spend, slot)),
  };
  const plainSpend = jobs && coalescedAdds((id, spend: RolloutSpend) => jobs.addSpend(id, spend), sumSpend);
  const plainAdd = meter && coalescedAdds((keyId, usage: Partial<Usage>) => meter.add(keyId, usage), mergeUsage);
  // Only plain adds go together; one naming a job, or metered once under its slot, is written as asked (a slot's spend
  // is one write of its own, checked against the slot's marker). Its other methods are the meter's own.
  const batchedMeter: UsageMeter | undefined =
    meter &&
    Object.assign(Object.create(meter) as UsageMeter, {
      add: (keyId: string, usage: Partial<Usage>, opts?: MeterOptions) =>
        opts?.jobId === undefined && opts?.once === undefined ? plainAdd!(keyId, usage) : meter.add(keyId, usage, opts),
    });
  return {
    ...deps,
    rollouts: batchedRollouts,
    ...(batchedJobs ? { jobs: batchedJobs } : {}),
    ...(batchedMeter ? { meter: batchedMeter } : {}),
  };
}
