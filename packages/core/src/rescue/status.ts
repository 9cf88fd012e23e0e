import { z } from "zod";
import { NotFoundError } from "../errors.ts";
import type { Clock } from "../util/clock.ts";
import { queryDecimal, queryInteger } from "../util/storable.ts";
import { ownedBy } from "../access/keys.ts";
import type { RescueJob, RescueJobStore } from "./job-record.ts";
import type { RescueSlots } from "../dispatch/slots.ts";
import type { RolloutStore, RolloutSummary } from "../rollout/store.ts";
import { unheardProgress, type RescueProgress } from "./progress.ts";
import { JobBill, PriceList, jobBill, type Prices } from "../billing/cost-of-goods.ts";
import { Quote } from "../billing/quote-schema.ts";
import type { UsageMeter } from "../billing/usage.ts";

export const RescueStatus = z.object({
  job: z.object({
    id: z.string(),
    poolId: z.string(),
    taskId: z.string(),
    chosen: z.array(z.string()),
    expected: z.number(),
  }),
  /**
   * failed: every slot is stored or given up on, and at least one was given up on (failed at once
   * with its code, or its message in the DLQ); cancelled: its key cancelled it before every slot was stored (slots
   * running then
   * may still be stored).
   */
  status: z.enum(["running", "done", "failed", "cancelled"]),
  completed: z.number().int(),
  /** Slots that will never be stored: the code of why (an error code of this service's), and what happened. */
  failed: z.array(z.object({ index: z.number(), code: z.string(), reason: z.string() })),
  rescued: z.boolean(),
  /** What a caller rescue's rollouts have spent so far, failed or not (held against its budget). */
  spent: z.object({ policyTokens: z.number().int(), policySeconds: z.number(), environmentSeconds: z.number() }),
  rollouts: z.array(
    z.object({
      index: z.number(),
      harnessId: z.string(),
      reward: z.number(),
      success: z.boolean(),
      failureTags: z.array(z.string()),
      steps: z.number(),
    }),
  ),
  /** What it was quoted when it was asked for (null for a rescue started before quotes were kept). */
  quote: Quote.nullable(),
  /** What was metered under it so far, failed slots too: usage, cost of goods and charge at its tariff. */
  actual: JobBill.nullable(),
});
export type RescueStatus = z.infer<typeof RescueStatus>;

/**
 * Status of a rescue, derived from the stored rollouts' summaries (no counters to drift). With `key`, a
 * rescue another key started is "not found" (see {@link visibleTo}).
 */
export async function rescueStatus(
  id: string,
  deps: { jobs: RescueJobStore; rollouts: RolloutStore; rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
): Promise<RescueStatus> {
  return (await readStatus(id, deps, key)).status;
}

/**
 * A rescue's status, with the key that started it (what a waiting read releases its slots for).
 * With `releaseFor` (a waiting read told that every slot is stored), that key's slots are given
 * back beside the reads.
 */
async function readStatus(
  id: string,
  deps: { jobs: RescueJobStore; rollouts: RolloutStore; rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
  releaseFor?: string,
): Promise<{ status: RescueStatus; keyId: string | undefined; tariff: Prices | undefined }> {
  const released = releaseBeside(id, releaseFor, deps);
  // Read together: a rescue another key started is still "not found", its rollouts read and dropped.
  const [job, stored] = await Promise.all([deps.jobs.get(id), deps.rollouts.summaries(id)]);
  return { status: await statusOf(id, job, stored, deps, key, released), keyId: job?.keyId, tariff: job?.tariff };
}

/** Where a status's bill is read: the meter (what was metered under the rescue) and the deployment's prices. */
type BillDeps = { meter?: Pick<UsageMeter, "job">; prices?: Prices; priceList?: PriceList };

/** `status` with what was metered under it so far (none without a meter): one read, as it is answered. */
async function billed(status: RescueStatus, tariff: Prices | undefined, deps: BillDeps): Promise<RescueStatus> {
  const at = tariff ?? deps.prices;
  if (!deps.meter || !at) return status;
  const usage = await deps.meter.job(status.job.id);
  return { ...status, actual: jobBill(usage, at, deps.priceList ?? PriceList.parse({})) };
}

/**
 * Gives a finished rescue's slots back to `keyId` (none: nothing), started now and awaited by {@link statusOf}, beside
 * the reads that show it finished.
 */
function releaseBeside(
  id: string,
  keyId: string | undefined,
  deps: { rescueSlots?: RescueSlots },
): Promise<void> | undefined {
  const released = keyId !== undefined ? deps.rescueSlots?.release(keyId, id) : undefined;
  released?.catch(() => undefined);
  return released;
}

/** A rescue's status from its record and its stored rollouts' summaries, as read. */
async function statusOf(
  id: string,
  job: RescueJob | undefined,
  stored: readonly RolloutSummary[],
  deps: { rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
  released?: Promise<void>,
): Promise<RescueStatus> {
  // The job as read beside its rollouts' summaries, seen as `key` may see it (the one ownership rule).
  if (!job) throw new NotFoundError("rescue", id);
  if (key) await ownedBy({ get: async () => job }, key, "rescue").get(id);
  const rewards = stored.map((r) => r.reward);
  const storedAt = new Set(stored.map((r) => r.index));
  const failed = [
    ...new Map((job.failures ?? []).filter((f) => !storedAt.has(f.index)).map((f) => [f.index, f])).values(),
  ].sort((a, b) => a.index - b.index);
  const status =
    stored.length >= job.expected
      ? "done"
      : job.cancelledAt !== undefined
        ? "cancelled"
        : stored.length + failed.length >= job.expected
          ? "failed"
          : "running";
  // Its end seen: its slots go back to its key (else its hold expires by itself).
  if (status !== "running" && job.keyId !== undefined) await (released ?? deps.rescueSlots?.release(job.keyId, job.id));
  return {
    job: { id: job.id, poolId: job.poolId, taskId: job.taskId, chosen: job.chosen, expected: job.expected },
    status,
    completed: stored.length,
    failed,
    rescued: rewards.some((r) => r !== rewards[0]) || rewards.some((r) => r > 0),
    spent: {
      policyTokens: job.spentPolicyTokens ?? 0,
      policySeconds: (job.spentPolicyMs ?? 0) / 1000,
      environmentSeconds: (job.spentEnvironmentMs ?? 0) / 1000,
    },
    rollouts: stored.map(({ index, harnessId, reward, success, failureTags, steps }) => ({
      index,
      harnessId,
      reward,
      success,
      failureTags,
      steps,
    })),
    quote: job.quote ?? null,
    actual: null,
  };
}

/**
 * The longest a status read may wait for progress (`?wait=`), and how it looks for it: its looks
 * start `looks.firstMs` apart and grow `looks.growth` times each look up to `looks.maxMs` apart
 * (back to `firstMs` when a look or a wake finds something changed), so a rescue of a few hundred
 * ms is answered within a few tens of ms of its end while a 20 s wait costs about a hundred looks;
 * a look reads the rollouts' summaries (one small read), and the rescue's record too when one more
 * is stored or `recordMs` have passed since it was last read (a failed slot or a cancel seen within
 * about that). Where a {@link RescueProgress} hears the dispatch workers store each rollout
 * (serve), a waiting read looks when what it was told answers its `seen`, and otherwise every
 * `heardLooksMs` (a failed slot, a cancel, a rollout stored by another process's workers).
 */
export const RESCUE_WAIT = {
  maxSeconds: 20,
  looks: { firstMs: 25, growth: 1.5, maxMs: 200 },
  recordMs: 200,
  heardLooksMs: 200,
} as const;

/**
 * How long a long poll waits before its next look, after waiting `lastMs` (0: none yet) and seeing a change or not;
 * told of each store (`hears`), `heardLooksMs`.
 */
export function nextLookMs(lastMs: number, changed: boolean, hears = false): number {
  if (hears) return RESCUE_WAIT.heardLooksMs;
  const { firstMs, growth, maxMs } = RESCUE_WAIT.looks;
  return changed || lastMs === 0 ? firstMs : Math.min(maxMs, lastMs * growth);
}

/** A status read's query: wait up to `wait` seconds until more than `seen` slots have finished. */
export const RescueWaitQuery = z.object({
  wait: queryDecimal(0, RESCUE_WAIT.maxSeconds).default(0),
  seen: queryInteger(0, Number.MAX_SAFE_INTEGER).default(0),
});
export type RescueWaitQuery = z.infer<typeof RescueWaitQuery>;

type WaitDeps = BillDeps & {
  jobs: RescueJobStore;
  rollouts: RolloutStore;
  clock: Clock;
  rescueSlots?: RescueSlots;
  progress?: RescueProgress;
};
type Key = { id: string; scopes: readonly string[] };

/**
 * A rescue's status once it has moved past `seen` slots finished (stored or given up on), or it
 * is no longer running, or `wait` seconds have passed: a trainer follows a rescue slot by slot
 * without polling in a loop of its own. Looks as {@link RESCUE_WAIT} says; where `progress` hears
 * each rollout stored, it looks once what it was told answers `seen` (every slot told stored: the
 * record, the summaries and the slots given back all at once), not at each store.
 *
 * @example
 * const next = await waitForRescue("rsc_1", { seen: 3, wait: 10 }, deps, key);
 */
export async function waitForRescue(
  id: string,
  opts: { seen: number; wait: number },
  deps: WaitDeps,
  key?: Key,
): Promise<RescueStatus> {
  const until = deps.clock.now() + Math.min(opts.wait, RESCUE_WAIT.maxSeconds) * 1000;
  const progress = deps.progress ?? unheardProgress;
  // Watched before the first read: a rollout stored while a look is in flight is still told. Told
  // slots and the ones a look saw together are what is known stored (a slot in both counts once).
  const told = new Set<number>();
  let status: RescueStatus | undefined;
  const knownStored = () => new Set([...told, ...(status?.rollouts ?? []).map((r) => r.index)]).size;
  const answered = () => status !== undefined && knownStored() + status.failed.length > opts.seen;
  let woken = new AbortController();
  const unwatch = progress.watch(id, (index) => {
    told.add(index);
    if (answered()) woken.abort();
  });
  try {
    let keyId: string | undefined;
    let tariff: Prices | undefined;
    ({ status, keyId, tariff } = await readStatus(id, deps, key));
    let recordAt = deps.clock.now();
    for (let waitMs = nextLookMs(0, false, progress.hears); ; ) {
      if (
        status.status !== "running" ||
        status.completed + status.failed.length > opts.seen ||
        deps.clock.now() >= until
      )
        return await billed(status, tariff, deps);
      if (!answered()) await deps.clock.sleep(Math.max(0, Math.min(waitMs, until - deps.clock.now())), woken.signal);
      const wake = woken.signal.aborted || answered();
      if (woken.signal.aborted) woken = new AbortController();
      const before = status;
      if (wake && progress.hears) {
        // Told that enough moved: the record and summaries at once (and, every slot told stored, its slots given back
        // beside them).
        const everySlot = knownStored() >= status.job.expected;
        ({ status, keyId } = await readStatus(id, deps, key, everySlot ? keyId : undefined));
        recordAt = deps.clock.now();
      } else if (deps.clock.now() - recordAt >= RESCUE_WAIT.recordMs) {
        ({ status, keyId } = await readStatus(id, deps, key));
        recordAt = deps.clock.now();
      } else {
        const looked = await lookAtSummaries(id, status, keyId, deps, key);
        if (looked) ({ status, recordAt } = { status: looked, recordAt: deps.clock.now() });
      }
      const changed = wake || status.completed !== before.completed || status.failed.length !== before.failed.length;
      waitMs = nextLookMs(waitMs, changed, progress.hears);
    }
  } finally {
    unwatch();
  }
}

/**
 * A look at the summaries alone (one request); when more are stored, the status with the record read again (undefined:
 * nothing new).
 */
async function lookAtSummaries(
  id: string,
  status: RescueStatus,
  keyId: string | undefined,
  deps: WaitDeps,
  key?: Key,
): Promise<RescueStatus | undefined> {
  const stored = await deps.rollouts.summaries(id);
  if (stored.length <= status.completed) return undefined;
  // Every slot stored: it is done whatever its record says, so its slots go back beside the record's read.
  const released = releaseBeside(id, stored.length >= status.job.expected ? keyId : undefined, deps);
  return statusOf(id, await deps.jobs.get(id), stored, deps, key, released);
}

/**
 * Cancels a rescue for its key: slots not started are never run (the dispatch worker skips them),
 * slots running finish and are kept. Cancelling again, or a finished rescue, changes nothing.
 *
 * @example
 * const status = await cancelRescue("rsc_1", deps, key);
 */
export async function cancelRescue(
  id: string,
  deps: BillDeps & { jobs: RescueJobStore; rollouts: RolloutStore; clock: Clock; rescueSlots?: RescueSlots },
  key?: { id: string; scopes: readonly string[] },
): Promise<RescueStatus> {
  await rescueStatus(id, deps, key); // not found for another key
  await deps.jobs.cancel(id, deps.clock.now());
  const { status, tariff } = await readStatus(id, deps, key);
  return billed(status, tariff, deps);
}
