import { z } from "zod";
import { ConflictError, HarnessSError, NotConfiguredError, NotFoundError, PartialSendError, RescueSlotsError, ValidationError } from "../errors.ts";
import { CallerRescue, callerTaskOf, type CallerPolicies, type CallerRollout, type RolloutSpend } from "./caller-rescue.ts";
import { Id, Name } from "../names.ts";
import { harnessById, harnessIds } from "../harness/pool.ts";
import { hash32 } from "../util/rng.ts";
import type { Clock } from "../util/clock.ts";
import { envelope, type Envelope, type RolloutRequestedBody } from "../messaging/envelope.ts";
import { SLOT_REASON_CHARS, type PolicyEndpoints, type RescueJob, type RescueJobStore, type RescueSlots } from "./job-record.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import type { PoolStore } from "../harness/pool-store.ts";
import type { RolloutStore } from "../rollout/store.ts";
import type { TaskSource } from "../task-source.ts";
import type { UsageMeter } from "../billing/usage.ts";
import { budgetExhausted, recordSpend } from "./spend.ts";
import type { Rollout } from "../rollout/types.ts";
import { type RouteRequest, routeTask, type RouteTaskDeps } from "../routing/route-task.ts";
import { DEFAULT_TOP_K, MAX_TOP_K, TopK } from "../voting/top-k.ts";

export const RescueRequest = z
  .object({
    poolId: Id,
    /** A task of the service's own task source; with `caller`, the caller's task (its id) instead. */
    taskId: Id.optional(),
    /** The failed group's failure tags (what the router reads); may be empty only with `harnesses`. */
    failureTags: z.array(Name).max(50).default([]),
    failedEvents: z.array(z.string().max(100)).max(100).default([]),
    k: TopK.default(DEFAULT_TOP_K),
    rolloutsPerHarness: z.number().int().min(1).max(32).default(2),
    /** Rescue with the caller's own policy endpoint and environment, the task given as data. */
    caller: CallerRescue.optional(),
    /**
     * Run exactly these harnesses of the pool instead of routing (H0's id for a trainer's base
     * group); `k` is then ignored and no vote is cast.
     */
    harnesses: z.array(Id).min(1).max(MAX_TOP_K).optional(),
  })
  .refine((r) => r.taskId !== undefined || r.caller !== undefined, { path: ["taskId"], message: "name a task of the service (taskId) or give the caller's own (caller.task)" })
  .refine((r) => r.failureTags.length > 0 || r.harnesses !== undefined, {
    path: ["failureTags"],
    message: "a rescue is routed by the failed group's failure tags: give at least one (or name the harnesses to run)",
  });
export type RescueRequest = z.infer<typeof RescueRequest>;

/** A key's rescue rollouts in flight at most, and how long a rescue holds its slots when its end is never seen. */
export const RESCUE_SLOTS = { perKey: 256, holdMs: 30 * 60_000 } as const;

/**
 * Starts an elastic rescue: routes the failed task to its Top-k siblings, holds its rollouts among
 * the key's rescue slots in flight (`RESCUE_SLOTS`: 429 past them), records the job, and fans out
 * k × rolloutsPerHarness rollout requests to the dispatch queue. `onSpend` hears of the
 * routing's voter tokens as they are spent.
 *
 * @example
 * const job = await startRescue(RescueRequest.parse({ poolId: "embedded", taskId: "app-train-pages-0", failureTags: ["incomplete-results"] }), deps);
 */
export async function startRescue(
  req: RescueRequest,
  deps: RouteTaskDeps & { tasks: TaskSource; jobs: RescueJobStore; dispatch: MessageQueue; callers?: CallerPolicies; rescueSlots?: RescueSlots },
  keyId?: string,
  onSpend?: Parameters<typeof routeTask>[3],
): Promise<RescueJob> {
  const caller = req.caller ? await pinnedCaller(req.caller, keyId, deps.callers) : undefined;
  const taskId = req.taskId ?? req.caller!.task.id;
  const builtin = !caller || caller.environment.kind === "builtin";
  const task = builtin ? await deps.tasks.get(taskId) : callerTaskOf(caller.task);
  if (!task) throw new NotFoundError("task", taskId);
  const decision = req.harnesses
    ? await namedHarnesses(req.poolId, req.harnesses, deps)
    : await routeTask(
        {
          poolId: req.poolId,
          task: { id: task.id, family: task.family, tags: [...task.tags] },
          failureTags: req.failureTags,
          failedEvents: req.failedEvents,
          k: req.k,
        } satisfies RouteRequest,
        deps,
        keyId,
        onSpend,
      );
  const job: RescueJob = {
    id: `rsc_${decision.id}`,
    poolId: req.poolId,
    taskId: task.id,
    decisionId: decision.id,
    chosen: decision.chosen,
    rolloutsPerHarness: req.rolloutsPerHarness,
    expected: decision.chosen.length * req.rolloutsPerHarness,
    createdAt: deps.clock.now(),
    ...(keyId === undefined ? {} : { keyId }),
    ...(caller ? { caller } : {}),
  };
  if (deps.rescueSlots && keyId !== undefined) {
    const now = deps.clock.now();
    if (!(await deps.rescueSlots.hold(keyId, job.id, job.expected, RESCUE_SLOTS.perKey, now, now + RESCUE_SLOTS.holdMs)))
      throw new RescueSlotsError(RESCUE_SLOTS.perKey, job.expected);
  }
  await deps.jobs.create(job);
  const messages: Envelope[] = decision.chosen.flatMap((harnessId, h) =>
    Array.from({ length: req.rolloutsPerHarness }, (_, i) => {
      const index = h * req.rolloutsPerHarness + i;
      return envelope(
        "rollout.requested",
        `${job.id}:${index}`,
        {
          jobId: job.id,
          index,
          poolId: req.poolId,
          harnessId,
          taskId: task.id,
          seed: hash32(`${job.id}:${index}`),
          policyId: "default",
          rescueJob: true,
          ...(caller ? { caller, policyVersion: caller.weightVersion, task } : {}),
        },
        keyId !== undefined ? { keyId, jobId: job.id } : undefined,
      );
    }),
  );
  try {
    await deps.dispatch.send(messages);
  } catch (err) {
    throw err instanceof PartialSendError ? err.withContext({ rescueId: job.id }) : err;
  }
  return job;
}

/** The harnesses a request names, checked against its pool, under a decision id of their own (no vote). */
async function namedHarnesses(poolId: string, names: readonly string[], deps: Pick<RouteTaskDeps, "pools" | "newId">): Promise<{ id: string; chosen: string[] }> {
  const pool = await deps.pools.get(poolId);
  if (!pool) throw new NotFoundError("pool", poolId);
  const known = new Set(harnessIds(pool));
  const unknown = names.filter((h) => !known.has(h));
  if (unknown.length)
    throw new ValidationError(
      "rescue",
      unknown.map((h) => `harnesses: ${h} is not a harness of pool ${poolId}`),
    );
  return { id: `run_${deps.newId()}`, chosen: [...names] };
}

/** A caller rescue pinned to one weight version: the one asked for, or the endpoint's now. */
async function pinnedCaller(req: CallerRescue, keyId: string | undefined, callers: CallerPolicies | undefined): Promise<CallerRollout> {
  if (!callers || keyId === undefined) throw new NotConfiguredError("rescues with the caller's own policy are not deployed here");
  await callers.checkEnvironment(req.environment);
  const weightVersion = req.weightVersion ?? (await callers.currentVersion(keyId, req.endpoint));
  return { ...req, keyId, weightVersion };
}

/** What the dispatch use-case runs a rollout with. */
export interface DispatchDeps {
  pools: PoolStore;
  tasks: TaskSource;
  rollouts: RolloutStore;
  policies: PolicyEndpoints;
  /** Rescues with the caller's own policy and environment; without it their rollouts fail with NOT_CONFIGURED. */
  callers?: CallerPolicies;
  /** A cancelled rescue's slots are skipped, a caller rescue's budget is held, and a slot that cannot succeed is recorded failed. */
  jobs?: RescueJobStore;
  /** Where a caller rescue's policy tokens, its wait on the policy and its environment time are metered to its key. */
  meter?: UsageMeter;
  /** Hears of each slot failed at once (its code and reason, secrets already masked). */
  log?: (line: string) => void;
  /** Each key's caller rollouts running now, held against {@link CALLER_ROLLOUT_FAIRNESS}; without it, none is held back. */
  running?: { slots: RescueSlots; clock: Clock };
}

/**
 * What one key's caller rollouts may hold of the dispatch workers: at most `perKeyRunning` run at
 * once, so a key whose endpoint never answers holds no more than that and other keys' rollouts
 * find workers free; a rollout past it is put back to wait its turn ("deferred": sent again with
 * a delay of about `deferSeconds.first`, twice as long each time up to `deferSeconds.max`, each
 * spread by ±50% so a key's waiting rollouts do not all come back at once). A running rollout's
 * hold lapses after `holdMs` (the dispatch function's 5-minute timeout and a margin) when its end
 * is never seen.
 */
export const CALLER_ROLLOUT_FAIRNESS = { perKeyRunning: 32, holdMs: 6 * 60_000, deferSeconds: { first: 5, max: 60 } } as const;

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

/** Holds one of the key's running places for this slot; undefined when they are all taken (or contended: the slot waits, never fails). */
async function holdRunning(body: RolloutRequestedBody, keyId: string, running: DispatchDeps["running"]): Promise<{ release: () => Promise<void> } | undefined> {
  if (!running) return { release: async () => undefined };
  const id = `${body.jobId}:${body.index}`;
  const now = running.clock.now();
  const { perKeyRunning, holdMs } = CALLER_ROLLOUT_FAIRNESS;
  const held = await running.slots.hold(keyId, id, 1, perKeyRunning, now, now + holdMs).catch((err: unknown) => {
    if (err instanceof ConflictError) return false;
    throw err;
  });
  return held ? { release: () => running.slots.release(keyId, id) } : undefined;
}

/**
 * The dispatch use-case: one rollout, stored once per (job, index) even under redelivery; none for
 * a cancelled rescue, or a caller rescue past its budget. A caller rescue's slot that fails for a
 * reason no retry can change (its endpoint's or environment's answer, a refused URL, a version it
 * does not hold, anything but this service's own passing failures: {@link slotFailure}) is
 * recorded failed at once with its code ("failed"), never left to the queue's redeliveries.
 */
export async function runRequestedRollout(body: RolloutRequestedBody, deps: DispatchDeps): Promise<"stored" | "duplicate" | "cancelled" | "over-budget" | "failed" | "deferred"> {
  if (!body.caller) return runOwnRollout(body, deps);
  // A key's running places are asked first: a rollout that waits its turn costs no other read (its
  // worker checks now and then whether its rescue was cancelled meanwhile).
  const lease = await holdRunning(body, body.caller.keyId, deps.running);
  if (!lease) return "deferred";
  try {
    return await runHeldCallerRollout(body, body.caller, deps);
  } finally {
    await lease.release().catch(() => undefined);
  }
}

/** A rollout at this service's own policy (an experiment's, or a rescue of the service's own). */
async function runOwnRollout(body: RolloutRequestedBody, deps: DispatchDeps): Promise<"stored" | "duplicate" | "cancelled"> {
  if (await deps.rollouts.has(body.jobId, body.index)) return "duplicate";
  if (body.rescueJob && (await deps.jobs?.get(body.jobId))?.cancelledAt !== undefined) return "cancelled";
  const { task, harness } = await rolloutInputs(body, deps);
  return deps.rollouts.put(body.jobId, body.index, await deps.policies.runner(body.policyId, body.policyVersion)(task, harness, body.seed));
}

/** A caller rescue's slot holding one of its key's running places: run, or failed at once with its code. */
async function runHeldCallerRollout(
  body: RolloutRequestedBody,
  caller: CallerRollout,
  deps: DispatchDeps,
): Promise<"stored" | "duplicate" | "cancelled" | "over-budget" | "failed"> {
  if (await deps.rollouts.has(body.jobId, body.index)) return "duplicate";
  const job = await deps.jobs?.get(body.jobId);
  if (job?.cancelledAt !== undefined) return "cancelled";
  const exhausted = budgetExhausted(caller.budget, job);
  if (exhausted) {
    await deps.jobs!.recordFailure(body.jobId, body.index, exhausted);
    return "over-budget";
  }
  let rollout: Rollout;
  try {
    rollout = await runCallerRollout(body, caller, deps);
  } catch (err) {
    const failure = slotFailure(err);
    if (REDELIVERED_CODES.has(failure.code) || !deps.jobs) throw err;
    await deps.jobs.recordFailure(body.jobId, body.index, failure);
    deps.log?.(`dispatch: rescue ${body.jobId} slot ${body.index} failed (${failure.code}): ${failure.reason}`);
    return "failed";
  }
  return deps.rollouts.put(body.jobId, body.index, rollout);
}

async function rolloutInputs(body: RolloutRequestedBody, deps: Pick<DispatchDeps, "pools" | "tasks">) {
  const pool = await deps.pools.get(body.poolId);
  if (!pool) throw new NotFoundError("pool", body.poolId);
  const task = body.task ?? (await deps.tasks.get(body.taskId));
  if (!task) throw new NotFoundError("task", body.taskId);
  return { task, harness: harnessById(pool, body.harnessId) };
}

/** One rollout at the caller's policy in its environment; what it spent is metered to its key, failed or not. */
async function runCallerRollout(body: RolloutRequestedBody, caller: CallerRollout, deps: DispatchDeps): Promise<Rollout> {
  const { task, harness } = await rolloutInputs(body, deps);
  if (!deps.callers) throw new NotConfiguredError("this dispatch worker runs no caller rescues");
  const spent: RolloutSpend = { policyTokens: 0, policyMs: 0, environmentMs: 0 };
  const run = await deps.callers.runner(caller, (s) => {
    spent.policyTokens += s.policyTokens;
    spent.policyMs += s.policyMs;
    spent.environmentMs += s.environmentMs;
  });
  try {
    return await run(task, harness, body.seed);
  } finally {
    await recordSpend(caller.keyId, body.jobId, spent, deps);
  }
}

/** Codes of failures that are this service's own and passing (a store, a queue): such a slot is left to the queue to deliver again. */
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
