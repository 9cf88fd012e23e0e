import { NotConfiguredError, NotFoundError, ValidationError } from "../errors.ts";
import { PartialSendError } from "../messaging/errors.ts";
import { RescueSlotsError } from "./errors.ts";
import type { UsageSink } from "../billing/usage.ts";
import { ownTaskOf, type CallerRescue } from "../callers/caller-rescue.ts";
import type { Task } from "../task.ts";
import type { Clock } from "../util/clock.ts";
import { inOrder } from "../util/in-order.ts";
import { rescueRollouts, type RescueRequest } from "./rescue-request.ts";
import type { CallerPolicies } from "../dispatch/rollout-source.ts";
import { harnessIds } from "../harness/pool.ts";
import { hash32 } from "../util/rng.ts";
import { envelope, type Envelope } from "../messaging/envelope.ts";
import "../dispatch/rollout-request.ts"; // registers rollout.requested
import type { RescueJob, RescueJobStore } from "./job-record.ts";
import type { Quote } from "../billing/quote-schema.ts";
import type { Prices } from "../billing/cost-of-goods.ts";
import type { RescueSlots } from "../dispatch/slots.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import type { TaskSource } from "../task-source.ts";
import { type RouteRequest, routeTask, type RouteTaskDeps } from "../routing/route-task.ts";
import { adviseCallerRescue } from "../callers/caller-adaptive.ts";
import type { AdaptiveChoice } from "../training/adaptive.ts";

/** A key's rescue rollouts in flight at most, and how long a rescue holds its slots when its end is never seen. */
export const RESCUE_SLOTS = { perKey: 256, holdMs: 30 * 60_000 } as const;

/**
 * Starts an elastic rescue: routes the failed task to its Top-k siblings, holds its rollouts among
 * the key's rescue slots in flight (`RESCUE_SLOTS`: 429 past them), records the job, and fans out
 * k × rolloutsPerHarness rollout requests to the dispatch queue. `used` hears of the
 * routing's voter tokens as they are spent, its ballots, and the rollouts it sends. With `mode: "adaptive"` the same
 * rollouts go where the
 * adaptive choice puts them (returned as `adaptive`); when it chooses nothing, nothing is recorded
 * or sent and the answer has `expected` 0.
 *
 * What does not depend on another is asked at once (a caller's endpoint is read once; its version
 * asked while the rest goes on; the slots held meanwhile, and let go if the version cannot be
 * had), errors answered in the order of the steps (the caller's checks, its version, the task,
 * the routing, the slots). A vote waits for the caller's checks: a refused rescue spends nothing.
 *
 * @example
 * const job = await startRescue(RescueRequest.parse({ poolId: "embedded", taskId: "app-train-pages-0", failureTags: ["incomplete-results"] }), deps);
 */
export async function startRescue(
  req: RescueRequest,
  deps: RouteTaskDeps & {
    tasks: TaskSource;
    jobs: RescueJobStore;
    dispatch: MessageQueue;
    callers?: CallerPolicies;
    rescueSlots?: RescueSlots;
    /**
     * Its quote and tariff, refused (402) above what its key has left: asked beside the checks, answered before
     * anything is voted or held (quoting stays above the products).
     */
    price?: (req: RescueRequest) => Promise<{ quote: Quote; tariff: Prices }>;
  },
  keyId?: string,
  used?: UsageSink,
): Promise<RescueJob & { adaptive?: AdaptiveChoice }> {
  const priced = deps.price?.(req);
  priced?.catch(() => undefined);
  const pin = req.caller ? pinCaller(req.caller, keyId, deps.callers) : undefined;
  // Named harnesses are a pool read (no vote, nothing spent): asked with the checks, answered after them.
  const named = req.harnesses ? namedHarnesses(req.poolId, req.harnesses, deps) : undefined;
  named?.catch(() => undefined);
  // A later step's error waits for the version: the version's own error is answered first, as in a sequence.
  const versionFirst = async (err: unknown): Promise<never> => {
    await pin?.version;
    throw err;
  };
  const [, task, price] = await inOrder([
    pin?.checked ?? Promise.resolve(),
    rescueTask(req, deps),
    priced ?? Promise.resolve(undefined),
  ]).catch(async (err) => {
    await pin?.checked;
    return versionFirst(err);
  });
  const decision = await (named ?? decide(req, task, deps, keyId, used)).catch(versionFirst);
  const expected = rescueRollouts({ ...req, harnesses: decision.chosen });
  const advice =
    req.mode === "adaptive"
      ? await adviseCallerRescue({ ...req, family: task.family, rollouts: expected }, decision, deps).catch(
          versionFirst,
        )
      : undefined;
  const slots =
    advice?.slots ??
    Array.from({ length: expected }, (_, i) => decision.chosen[Math.floor((i * decision.chosen.length) / expected)]!);
  const id = `rsc_${decision.id}`;
  const weightVersion =
    advice && slots.length === 0
      ? await pin?.version
      : await holdWhilePinned(id, slots.length, pin?.version, deps, keyId);
  const caller =
    req.caller && weightVersion !== undefined ? { ...req.caller, keyId: keyId!, weightVersion } : undefined;
  const job: RescueJob = {
    id,
    poolId: req.poolId,
    taskId: task.id,
    decisionId: decision.id,
    chosen: [...new Set(slots)],
    rolloutsPerHarness: req.rolloutsPerHarness,
    expected: slots.length,
    createdAt: deps.clock.now(),
    ...(keyId === undefined ? {} : { keyId }),
    ...(caller ? { caller } : {}),
    ...(price ? { quote: price.quote, tariff: price.tariff } : {}),
  };
  if (advice && slots.length === 0) return { ...job, adaptive: advice.adaptive };
  await deps.jobs.create(job);
  await deps.dispatch.send(rolloutMessages(job, slots, task.id, keyId)).catch((err: unknown) => {
    throw err instanceof PartialSendError ? err.withContext({ rescueId: job.id }) : err;
  });
  used?.({ rollouts: job.expected }, { jobId: job.id });
  return advice ? { ...job, adaptive: advice.adaptive } : job;
}

/**
 * Every check a rescue request must pass before anything is held, recorded, voted or quoted, the
 * same rules {@link startRescue} applies (there with the version asked beside them): a caller
 * rescue's endpoint (the key's own) and environment (through the outbound guard), its task, and
 * its pool (one this key may see) with the harnesses it names.
 */
export async function admitRescue(
  req: RescueRequest,
  keyId: string,
  deps: Pick<RouteTaskDeps, "pools" | "newId"> & { tasks: TaskSource; callers?: CallerPolicies },
): Promise<void> {
  if (req.caller) await callerChecks(req.caller, keyId, deps.callers);
  await rescueTask(req, deps);
  if (req.harnesses) await namedHarnesses(req.poolId, req.harnesses, deps);
  else if (!(await deps.pools.get(req.poolId))) throw new NotFoundError("pool", req.poolId);
}

/** The task a rescue runs: the caller's own (its environment serves it), else this service's of that id. */
async function rescueTask(req: RescueRequest, deps: { tasks: TaskSource }): Promise<Task> {
  const taskId = req.taskId ?? req.caller!.task.id;
  const task = (req.caller && ownTaskOf(req.caller)) ?? (await deps.tasks.get(taskId));
  if (!task) throw new NotFoundError("task", taskId);
  return task;
}

/** The routing's Top-k harnesses for a rescue's task. */
function decide(
  req: RescueRequest,
  task: Task,
  deps: RouteTaskDeps,
  keyId: string | undefined,
  used: UsageSink | undefined,
): Promise<{ id: string; chosen: string[] }> {
  const route = {
    poolId: req.poolId,
    task: { id: task.id, family: task.family, tags: [...task.tags] },
    failureTags: req.failureTags,
    failedEvents: req.failedEvents,
    k: req.k,
  };
  return routeTask(route satisfies RouteRequest, deps, keyId, used);
}

/**
 * Holds a rescue's `slots` among its key's (`RESCUE_SLOTS`) while its caller's version is asked;
 * the version (undefined: not a caller rescue). A version that cannot be had lets the hold go and
 * is answered before a full key's 429.
 */
async function holdWhilePinned(
  id: string,
  slots: number,
  version: Promise<number> | undefined,
  deps: { rescueSlots?: RescueSlots; clock: Clock },
  keyId: string | undefined,
) {
  const now = deps.clock.now();
  const store = keyId === undefined ? undefined : deps.rescueSlots;
  const hold = store
    ? store.hold(keyId!, id, slots, RESCUE_SLOTS.perKey, now, now + RESCUE_SLOTS.holdMs)
    : Promise.resolve(true);
  const [held, pinned] = await Promise.allSettled([hold, version]);
  if (pinned.status === "rejected") {
    if (held.status === "fulfilled" && held.value) await store?.release(keyId!, id).catch(() => undefined);
    throw pinned.reason;
  }
  if (held.status === "rejected") throw held.reason;
  if (!held.value) throw new RescueSlotsError(RESCUE_SLOTS.perKey, slots);
  return pinned.value;
}

/**
 * Routed, each harness runs a block of consecutive slots: slot i runs chosen[⌊i·h/n⌋] (n slots, h harnesses); adaptive,
 * as allocated.
 */
function rolloutMessages(
  job: RescueJob,
  slots: readonly string[],
  taskId: string,
  keyId: string | undefined,
): Envelope[] {
  const source = job.caller
    ? ({ kind: "caller", ...job.caller } as const)
    : ({ kind: "service", policyId: "default" } as const);
  return Array.from({ length: job.expected }, (_, index) =>
    envelope(
      "rollout.requested",
      `${job.id}:${index}`,
      {
        jobId: job.id,
        index,
        poolId: job.poolId,
        harnessId: slots[index]!,
        taskId,
        seed: hash32(`${job.id}:${index}`),
        source,
        rescueJob: true,
      },
      keyId !== undefined ? { keyId, jobId: job.id } : undefined,
    ),
  );
}

/** The harnesses a request names, checked against its pool, under a decision id of their own (no vote). */
async function namedHarnesses(
  poolId: string,
  names: readonly string[],
  deps: Pick<RouteTaskDeps, "pools" | "newId">,
): Promise<{ id: string; chosen: string[] }> {
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

/**
 * A caller rescue's checks and the weight version it is pinned to (the one asked for, or the
 * endpoint's now; an endpoint that states none needs it named, with its served model), asked at
 * once: the endpoint's record is read once for both (the runners share a read in flight).
 */
function pinCaller(
  req: CallerRescue,
  keyId: string | undefined,
  callers: CallerPolicies | undefined,
): { checked: Promise<void>; version: Promise<number> } {
  const checked = callerChecks(req, keyId, callers);
  checked.catch(() => undefined); // answered in its turn
  const version =
    !callers || keyId === undefined
      ? checked.then(() => 0)
      : req.weightVersion === undefined
        ? callers.currentVersion(keyId, req.endpoint)
        : Promise.resolve(req.weightVersion);
  version.catch(() => undefined);
  return { checked, version };
}

/**
 * A caller rescue's checks: the deployment runs callers' policies, the endpoint is the key's own, the environment
 * passes the outbound guard.
 */
async function callerChecks(
  req: CallerRescue,
  keyId: string | undefined,
  callers: CallerPolicies | undefined,
): Promise<void> {
  if (!callers || keyId === undefined)
    throw new NotConfiguredError("rescues with the caller's own policy are not deployed here");
  await inOrder([callers.checkEndpoint(keyId, req), callers.checkEnvironment(req.environment)]);
}
