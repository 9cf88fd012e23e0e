import { AsyncLocalStorage } from "node:async_hooks";
import { batchedLookups, coalescedAdds, singleFlight } from "@harness-s/core";
import type { RescueJobStore, RolloutSpend } from "@harness-s/core/rescue";
import { mergeUsage, type Usage, type UsageMeter } from "@harness-s/core/billing";
import type { RolloutStore } from "@harness-s/core";

const sumSpend = (a: RolloutSpend, b: RolloutSpend): RolloutSpend => ({
  policyTokens: a.policyTokens + b.policyTokens,
  policyMs: a.policyMs + b.policyMs,
  environmentMs: a.environmentMs + b.environmentMs,
});

/** Runs a function in the async context it was captured in. */
type Context = <R>(fn: () => R) => R;

/**
 * The dispatch worker's stores as a batch of one rescue's slots uses them together: the slots of
 * one SQS batch (or ones running at once) share one read of their rescue's record
 * (`jobs.get` in flight), ask "stored already?" in one BatchGetItem per rescue (`rollouts.has`),
 * add their spend to their rescue in one update and meter it to their key in one write (what
 * arrives while such a write is in flight goes in the next). Every slot still awaits the write
 * that carried its part, so a spend is never lost or metered twice; a slot's rollout is stored
 * on its own (a conditional put: a redelivered slot stays a duplicate) as soon as it ends. A
 * shared request runs in the async context of the first slot that asked for it, which waits for
 * it: what it consumes is metered to a slot of that invocation still running, never to one
 * whose invocation has already been billed (slots of one rescue in different invocations).
 */
export function batchedDispatchStores<D extends { rollouts: RolloutStore; jobs?: RescueJobStore; meter?: UsageMeter }>(deps: D): D {
  const { rollouts, jobs, meter } = deps;
  const lookup = batchedLookups(
    (jobId: string, asked: { index: number; context: Context }[]) =>
      asked[0]!.context(async () => {
        const found = await rollouts.getMany(jobId, [...new Set(asked.map((a) => a.index))]);
        return new Map(asked.map((a) => [a, found.has(a.index)]));
      }),
    false,
  );
  const has = (jobId: string, index: number) => lookup(jobId, { index, context: AsyncLocalStorage.snapshot() });
  const batchedRollouts: RolloutStore = {
    put: (jobId, index, rollout) => rollouts.put(jobId, index, rollout),
    list: (jobId) => rollouts.list(jobId),
    summaries: (jobId) => rollouts.summaries(jobId),
    has,
    get: (jobId, index) => rollouts.get(jobId, index),
    getMany: (jobId, indexes) => rollouts.getMany(jobId, indexes),
  };
  const batchedJobs: RescueJobStore | undefined = jobs && {
    create: (job) => jobs.create(job),
    get: singleFlight(
      (id: string) => jobs.get(id),
      (id) => id,
    ),
    recordFailure: (id, index, failure) => jobs.recordFailure(id, index, failure),
    cancel: (id, at) => jobs.cancel(id, at),
    addSpend: (
      (add) => (id: string, spend: RolloutSpend) =>
        add(id, { spend, context: AsyncLocalStorage.snapshot() })
    )(
      coalescedAdds(
        (id, part: { spend: RolloutSpend; context: Context }) => part.context(() => jobs.addSpend(id, part.spend)),
        (a, b) => ({ spend: sumSpend(a.spend, b.spend), context: a.context }),
      ),
    ),
    listByKey: (keyId, page) => jobs.listByKey(keyId, page),
  };
  const plainAdd = meter && coalescedAdds((keyId, usage: Partial<Usage>) => meter.add(keyId, usage), mergeUsage);
  // Only plain adds go together; one naming a job is written as asked. Its other methods are the meter's own.
  const batchedMeter: UsageMeter | undefined =
    meter &&
    Object.assign(Object.create(meter) as UsageMeter, {
      add: (keyId: string, usage: Partial<Usage>, opts?: { jobId?: string }) => (opts?.jobId === undefined ? plainAdd!(keyId, usage) : meter.add(keyId, usage, opts)),
    });
  return { ...deps, rollouts: batchedRollouts, ...(batchedJobs ? { jobs: batchedJobs } : {}), ...(batchedMeter ? { meter: batchedMeter } : {}) };
}
