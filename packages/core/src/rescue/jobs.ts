import { NotConfiguredError, NotFoundError, PartialSendError, RescueSlotsError, ValidationError } from "../errors.ts";
import { ownTaskOf, type CallerRescue, type CallerRollout } from "./caller-rescue.ts";
import { rescueRollouts, type RescueRequest } from "./rescue-request.ts";
import type { CallerPolicies } from "./rollout-source.ts";
import { harnessIds } from "../harness/pool.ts";
import { hash32 } from "../util/rng.ts";
import { envelope, type Envelope } from "../messaging/envelope.ts";
import type { RescueJob, RescueJobStore, RescueSlots } from "./job-record.ts";
import type { MessageQueue } from "../messaging/queue.ts";
import type { TaskSource } from "../task-source.ts";
import { type RouteRequest, routeTask, type RouteTaskDeps } from "../routing/route-task.ts";
import { adviseCallerRescue } from "./caller-adaptive.ts";
import type { AdaptiveChoice } from "./adaptive.ts";

/** A key's rescue rollouts in flight at most, and how long a rescue holds its slots when its end is never seen. */
export const RESCUE_SLOTS = { perKey: 256, holdMs: 30 * 60_000 } as const;

/**
 * Starts an elastic rescue: routes the failed task to its Top-k siblings, holds its rollouts among
 * the key's rescue slots in flight (`RESCUE_SLOTS`: 429 past them), records the job, and fans out
 * k × rolloutsPerHarness rollout requests to the dispatch queue. `onSpend` hears of the
 * routing's voter tokens as they are spent. With `mode: "adaptive"` the same rollouts go where the
 * adaptive choice puts them (returned as `adaptive`); when it chooses nothing, nothing is recorded
 * or sent and the answer has `expected` 0.
 *
 * @example
 * const job = await startRescue(RescueRequest.parse({ poolId: "embedded", taskId: "app-train-pages-0", failureTags: ["incomplete-results"] }), deps);
 */
export async function startRescue(
  req: RescueRequest,
  deps: RouteTaskDeps & { tasks: TaskSource; jobs: RescueJobStore; dispatch: MessageQueue; callers?: CallerPolicies; rescueSlots?: RescueSlots },
  keyId?: string,
  onSpend?: Parameters<typeof routeTask>[3],
): Promise<RescueJob & { adaptive?: AdaptiveChoice }> {
  const caller = req.caller ? await pinnedCaller(req.caller, keyId, deps.callers) : undefined;
  const taskId = req.taskId ?? req.caller!.task.id;
  const task = (caller && ownTaskOf(caller)) ?? (await deps.tasks.get(taskId));
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
  const expected = rescueRollouts({ ...req, harnesses: decision.chosen });
  const advice = req.mode === "adaptive" ? await adviseCallerRescue({ ...req, family: task.family, rollouts: expected }, decision, deps) : undefined;
  const slots = advice?.slots ?? Array.from({ length: expected }, (_, i) => decision.chosen[Math.floor((i * decision.chosen.length) / expected)]!);
  const job: RescueJob = {
    id: `rsc_${decision.id}`,
    poolId: req.poolId,
    taskId: task.id,
    decisionId: decision.id,
    chosen: [...new Set(slots)],
    rolloutsPerHarness: req.rolloutsPerHarness,
    expected: slots.length,
    createdAt: deps.clock.now(),
    ...(keyId === undefined ? {} : { keyId }),
    ...(caller ? { caller } : {}),
  };
  if (advice && slots.length === 0) return { ...job, adaptive: advice.adaptive };
  if (deps.rescueSlots && keyId !== undefined) {
    const now = deps.clock.now();
    if (!(await deps.rescueSlots.hold(keyId, job.id, job.expected, RESCUE_SLOTS.perKey, now, now + RESCUE_SLOTS.holdMs)))
      throw new RescueSlotsError(RESCUE_SLOTS.perKey, job.expected);
  }
  await deps.jobs.create(job);
  const source = caller ? ({ kind: "caller", ...caller } as const) : ({ kind: "service", policyId: "default" } as const);
  // Routed, each harness runs a block of consecutive slots: slot i runs chosen[⌊i·h/n⌋] (n slots, h harnesses); adaptive, as allocated.
  const messages: Envelope[] = Array.from({ length: job.expected }, (_, index) =>
    envelope(
      "rollout.requested",
      `${job.id}:${index}`,
      {
        jobId: job.id,
        index,
        poolId: req.poolId,
        harnessId: slots[index]!,
        taskId: task.id,
        seed: hash32(`${job.id}:${index}`),
        source,
        rescueJob: true,
      },
      keyId !== undefined ? { keyId, jobId: job.id } : undefined,
    ),
  );
  try {
    await deps.dispatch.send(messages);
  } catch (err) {
    throw err instanceof PartialSendError ? err.withContext({ rescueId: job.id }) : err;
  }
  return advice ? { ...job, adaptive: advice.adaptive } : job;
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

/** A caller rescue pinned to one weight version: the one asked for, or the endpoint's now (an endpoint that states none needs it named, with its served model). */
async function pinnedCaller(req: CallerRescue, keyId: string | undefined, callers: CallerPolicies | undefined): Promise<CallerRollout> {
  if (!callers || keyId === undefined) throw new NotConfiguredError("rescues with the caller's own policy are not deployed here");
  await callers.checkEndpoint(keyId, req);
  await callers.checkEnvironment(req.environment);
  const weightVersion = req.weightVersion ?? (await callers.currentVersion(keyId, req.endpoint));
  return { ...req, keyId, weightVersion };
}
