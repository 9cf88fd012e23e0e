import { ConflictError, HarnessSError, NotFoundError } from "../errors.ts";
import { ownTaskOf, type RolloutSpend } from "../callers/caller-rescue.ts";
import type { SourceKind, SourceOf, SourceRunner } from "./rollout-source.ts";
import type { RolloutRequestedBody } from "./rollout-request.ts";
import { harnessById } from "../harness/pool.ts";
import type { Task } from "../task.ts";
import type { Clock } from "../util/clock.ts";
import { SLOT_REASON_CHARS, type RescueSlots, type SlotJobs } from "./slots.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import type { RolloutStore } from "../rollout/store.ts";
import type { TaskSource } from "../task-source.ts";
import type { UsageMeter } from "../billing/usage.ts";
import { budgetExhausted, recordSpend, recordSpendThen } from "./spend.ts";
import type { Rollout } from "../rollout/types.ts";

/** What the dispatch use-case runs a rollout with. */
export interface DispatchDeps {
  pools: PoolStore;
  tasks: TaskSource;
  rollouts: RolloutStore;
  /** The runner of each rollout's source; a kind it has no runner for fails with NOT_CONFIGURED. */
  runners: SourceRunner;
  /**
   * A cancelled rescue's slots are skipped, a caller rescue's budget is held, and a slot that cannot succeed is
   * recorded failed.
   */
  jobs?: SlotJobs;
  /** Where a caller rescue's policy tokens, its wait on the policy and its environment time are metered to its key. */
  meter?: UsageMeter;
  /** Hears of each slot failed at once (its code and reason, secrets already masked). */
  log?: (line: string) => void;
  /**
   * Each key's caller rollouts running now, held against {@link CALLER_ROLLOUT_FAIRNESS}; without it, none is held
   * back.
   */
  running?: { slots: RescueSlots; clock: Clock };
}

/**
 * What one key's caller rollouts may hold of the dispatch workers: at most `perKeyRunning` run at
 * once, so a key whose endpoint never answers holds no more than that and other keys' rollouts
 * find workers free; a rollout past it is put back to wait its turn ("deferred": sent again with
 * a delay of about `deferSeconds.first`, twice as long each time up to `deferSeconds.max`, each
 * spread by ±50% so a key's waiting rollouts do not all come back at once). A running rollout's
 * place is a lease of `holdMs`, renewed every `renewMs` while it runs: the place of a process that
 * died (a Lambda invocation past its timeout or memory) lapses within `holdMs`, not the function's
 * timeout. A slot's reads go out beside its hold, except for `holdFirstMs` after a worker
 * found its key at the limit: then its slots read only once held (one that waits costs no read).
 */
export const CALLER_ROLLOUT_FAIRNESS = {
  perKeyRunning: 32,
  holdMs: 30_000,
  renewMs: 10_000,
  deferSeconds: { first: 5, max: 60 },
  holdFirstMs: 10_000,
} as const;

/**
 * How long a message waits after its `deferrals`-th deferral (0 for the first), in whole seconds
 * as SQS takes them: the doubling delay, spread by `spread` in [0, 1) (a hash of the message: the
 * same message waits the same, different ones apart).
 *
 * @example
 * deferDelaySeconds(0, 0.5); // 5
 */
export function deferDelaySeconds(deferrals: number, spread: number): number {
  const { first, max } = CALLER_ROLLOUT_FAIRNESS.deferSeconds;
  return Math.max(1, Math.round(Math.min(max, first * 2 ** Math.min(deferrals, 16)) * (0.5 + spread)));
}

/**
 * Holds one of the key's running places for this slot; undefined when they are all taken (or contended: the slot waits,
 * never fails).
 */
async function holdRunning(
  body: RolloutRequestedBody,
  keyId: string,
  running: DispatchDeps["running"],
): Promise<{ release: () => Promise<void> } | undefined> {
  if (!running) return { release: async () => undefined };
  const id = `${body.jobId}:${body.index}`;
  const now = running.clock.now();
  const { perKeyRunning, holdMs } = CALLER_ROLLOUT_FAIRNESS;
  const held = await running.slots.hold(keyId, id, 1, perKeyRunning, now, now + holdMs).catch((err: unknown) => {
    if (err instanceof ConflictError) return false;
    throw err;
  });
  if (!held) {
    limitSeen(running).set(keyId, running.clock.now());
    return undefined;
  }
  const renewal = renewEvery(running, keyId, id);
  return {
    release: () => {
      clearInterval(renewal);
      return running.slots.release(keyId, id);
    },
  };
}

/**
 * Renews a running place's lease while its rollout runs (a failed renewal is let go: the next one tries again, and the
 * lease outlives two missed renewals).
 */
function renewEvery(running: NonNullable<DispatchDeps["running"]>, keyId: string, id: string) {
  const { perKeyRunning, holdMs, renewMs } = CALLER_ROLLOUT_FAIRNESS;
  const renew = () => {
    const now = running.clock.now();
    const slots = running.slots;
    void (
      slots.renew
        ? slots.renew(keyId, id, now, now + holdMs)
        : slots.hold(keyId, id, 1, perKeyRunning, now, now + holdMs)
    ).catch(() => undefined);
  };
  const timer = setInterval(renew, renewMs);
  timer.unref?.();
  return timer;
}

/**
 * When this worker last found each key at its limit, per `running` (bounded: entries past `holdFirstMs` are dropped as
 * it grows).
 */
const LIMIT_SEEN = new WeakMap<NonNullable<DispatchDeps["running"]>, Map<string, number>>();
const LIMIT_SEEN_KEYS = 1024;

function limitSeen(running: NonNullable<DispatchDeps["running"]>): Map<string, number> {
  const seen = LIMIT_SEEN.get(running) ?? new Map<string, number>();
  LIMIT_SEEN.set(running, seen);
  if (seen.size >= LIMIT_SEEN_KEYS)
    for (const [key, at] of seen) if (running.clock.now() - at >= CALLER_ROLLOUT_FAIRNESS.holdFirstMs) seen.delete(key);
  return seen;
}

/** Whether this key's slots read only once held: its limit was met here within `holdFirstMs`. */
function holdsFirst(keyId: string, running: DispatchDeps["running"]): boolean {
  const at = running && LIMIT_SEEN.get(running)?.get(keyId);
  return at !== undefined && running!.clock.now() - at < CALLER_ROLLOUT_FAIRNESS.holdFirstMs;
}

type Outcome = "stored" | "duplicate" | "cancelled" | "over-budget" | "failed" | "deferred";
type RequestOf<K extends SourceKind> = RolloutRequestedBody & { source: SourceOf<K> };

/** How the dispatch use-case runs a slot of each kind of source. */
const SLOTS: { [K in SourceKind]: (body: RequestOf<K>, deps: DispatchDeps) => Promise<Outcome> } = {
  service: runServiceSlot,
  caller: runCallerSlot,
};

/**
 * The dispatch use-case: one rollout, stored once per (job, index) even under redelivery; none for
 * a cancelled rescue, or a caller rescue past its budget. A caller rescue's slot that fails for a
 * reason no retry can change (its endpoint's or environment's answer, a refused URL, a version it
 * does not hold, anything but this service's own passing failures: {@link slotFailure}) is
 * recorded failed at once with its code ("failed"), never left to the queue's redeliveries.
 */
export function runRequestedRollout(body: RolloutRequestedBody, deps: DispatchDeps): Promise<Outcome> {
  return (SLOTS[body.source.kind] as (body: RolloutRequestedBody, deps: DispatchDeps) => Promise<Outcome>)(body, deps);
}

/** A rollout at this service's own policy (an experiment's, or a rescue of the service's own). */
async function runServiceSlot(body: RequestOf<"service">, deps: DispatchDeps): Promise<Outcome> {
  if (await deps.rollouts.has(body.jobId, body.index)) return "duplicate";
  if (body.rescueJob && (await deps.jobs?.get(body.jobId))?.cancelledAt !== undefined) return "cancelled";
  const { task, harness } = await rolloutInputs(body, deps);
  return deps.rollouts.put(
    body.jobId,
    body.index,
    await (await deps.runners.runner(body.source))(task, harness, body.seed),
  );
}

/** A caller rescue's slot: it waits its turn among its key's running places, then runs there. */
async function runCallerSlot(body: RequestOf<"caller">, deps: DispatchDeps): Promise<Outcome> {
  const spent: RolloutSpend = { policyTokens: 0, policyMs: 0, environmentMs: 0 };
  // Its reads go beside its hold (a round trip less before its run), unless its key was met at its
  // limit here lately: then it holds first, so a rollout that waits its turn costs no other read.
  const early = holdsFirst(body.source.keyId, deps.running) ? undefined : startSlotReads(body, deps, spent);
  const lease = await holdRunning(body, body.source.keyId, deps.running);
  if (!lease) return "deferred";
  try {
    return await runHeldCallerRollout(body, deps, spent, early ?? startSlotReads(body, deps, spent));
  } finally {
    await lease.release().catch(() => undefined);
  }
}

/**
 * What a caller slot reads before it runs: stored already? its rescue's record; what it runs with (the pool's harness,
 * the task, the endpoint).
 */
function startSlotReads(body: RequestOf<"caller">, deps: DispatchDeps, spent: RolloutSpend) {
  const reads = {
    duplicate: deps.rollouts.has(body.jobId, body.index),
    job: deps.jobs ? deps.jobs.get(body.jobId) : Promise.resolve(undefined),
    prepared: prepareCallerRollout(body, deps, spent),
  };
  // Each is awaited below unless the slot ends first (deferred, a duplicate, cancelled).
  for (const read of Object.values(reads)) (read as Promise<unknown>).catch(() => undefined);
  return reads;
}

/**
 * A caller rescue's slot holding one of its key's running places: run, or failed at once with its
 * code. The slot's checks (stored already? cancelled? over budget?) and what it runs with are
 * read at once, not one after another (`reads`). Its spend is held against its rescue before its
 * rollout is stored or its failure recorded, so a status that shows the slot finished counts it.
 */
async function runHeldCallerRollout(
  body: RequestOf<"caller">,
  deps: DispatchDeps,
  spent: RolloutSpend,
  reads: ReturnType<typeof startSlotReads>,
): Promise<Outcome> {
  const [duplicate, job] = await Promise.all([reads.duplicate, reads.job]);
  if (duplicate) return "duplicate";
  if (job?.cancelledAt !== undefined) return "cancelled";
  const exhausted = budgetExhausted(body.source.budget, job);
  if (exhausted) {
    await deps.jobs!.recordFailure(body.jobId, body.index, exhausted);
    return "over-budget";
  }
  let rollout: Rollout;
  try {
    const { run, task, harness } = await reads.prepared;
    rollout = await run(task, harness, body.seed);
  } catch (err) {
    const failure = slotFailure(err);
    if (REDELIVERED_CODES.has(failure.code) || !deps.jobs) {
      await recordSpend(body.source.keyId, body.jobId, spent, deps);
      throw err;
    }
    const jobs = deps.jobs;
    await recordSpendThen(
      body.source.keyId,
      body.jobId,
      spent,
      deps,
      () => jobs.recordFailure(body.jobId, body.index, failure),
      body.index,
    );
    deps.log?.(`dispatch: rescue ${body.jobId} slot ${body.index} failed (${failure.code}): ${failure.reason}`);
    return "failed";
  }
  return recordSpendThen(
    body.source.keyId,
    body.jobId,
    spent,
    deps,
    () => deps.rollouts.put(body.jobId, body.index, rollout),
    body.index,
  );
}

/** The pool's harness and the task: the one the message carries, else `own` (a caller's), else `taskId` looked up. */
async function rolloutInputs(body: RolloutRequestedBody, deps: Pick<DispatchDeps, "pools" | "tasks">, own?: Task) {
  const pool = await deps.pools.get(body.poolId);
  if (!pool) throw new NotFoundError("pool", body.poolId);
  const task = body.task ?? own ?? (await deps.tasks.get(body.taskId));
  if (!task) throw new NotFoundError("task", body.taskId);
  return { task, harness: harnessById(pool, body.harnessId) };
}

/**
 * What one rollout at the caller's policy in its environment runs with; what it spends adds to `spent`, to be metered
 * to its key failed or not.
 */
async function prepareCallerRollout(body: RequestOf<"caller">, deps: DispatchDeps, spent: RolloutSpend) {
  const [inputs, run] = await Promise.all([
    rolloutInputs(body, deps, ownTaskOf(body.source)),
    deps.runners.runner(body.source, (s) => {
      spent.policyTokens += s.policyTokens;
      spent.policyMs += s.policyMs;
      spent.environmentMs += s.environmentMs;
    }),
  ]);
  return { ...inputs, run };
}

/**
 * Codes of failures that are this service's own and passing (a store, a queue): such a slot is left to the queue to
 * deliver again.
 */
export const REDELIVERED_CODES: ReadonlySet<string> = new Set(["STORE_UNAVAILABLE", "PARTIAL_SEND"]);

/**
 * How a failed slot is recorded: its error's code (an error without one, `ROLLOUT_FAILED`) and
 * message, bounded.
 *
 * @example
 * slotFailure(new StalePolicyVersionError(0, 7)); // { code: "STALE_POLICY_VERSION", reason: "…" }
 */
export function slotFailure(err: unknown): { code: string; reason: string } {
  const code = err instanceof HarnessSError ? err.code : "ROLLOUT_FAILED";
  return { code, reason: (err instanceof Error ? err.message : String(err)).slice(0, SLOT_REASON_CHARS) };
}
