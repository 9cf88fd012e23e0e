import { z } from "zod";
import { NotFoundError } from "../errors.ts";
import { harnessById } from "../harness/pool.ts";
import { hash32 } from "../util/rng.ts";
import type { Envelope, RolloutRequestedBody } from "./messages.ts";
import type { MessageQueue, PolicyEndpoints, PoolStore, RescueJob, RescueJobStore, RolloutStore, TaskSource } from "./ports.ts";
import { RouteRequest, routeTask, type RouteTaskDeps } from "./route-task.ts";

export const RescueRequest = z.object({
  poolId: z.string().min(1),
  taskId: z.string().min(1),
  failureTags: z.array(z.string().max(100)).min(1).max(50),
  failedEvents: z.array(z.string().max(100)).max(100).default([]),
  k: z.number().int().min(1).max(8).default(2),
  rolloutsPerHarness: z.number().int().min(1).max(32).default(2),
});
export type RescueRequest = z.infer<typeof RescueRequest>;

/**
 * Starts an elastic rescue: routes the failed task to its Top-k siblings, records the job, and
 * fans out k × rolloutsPerHarness rollout requests to the dispatch queue.
 *
 * @example
 * const job = await startRescue(RescueRequest.parse({ poolId: "embedded", taskId: "app-train-pages-0", failureTags: ["incomplete-results"] }), deps);
 */
export async function startRescue(
  req: RescueRequest,
  deps: RouteTaskDeps & { tasks: TaskSource; jobs: RescueJobStore; dispatch: MessageQueue },
): Promise<RescueJob> {
  const task = await deps.tasks.get(req.taskId);
  if (!task) throw new NotFoundError("task", req.taskId);
  const decision = await routeTask(
    RouteRequest.parse({ poolId: req.poolId, task: { id: task.id, family: task.family, tags: task.tags }, failureTags: req.failureTags, failedEvents: req.failedEvents, k: req.k }),
    deps,
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
  };
  await deps.jobs.create(job);
  const messages: Envelope[] = decision.chosen.flatMap((harnessId, h) =>
    Array.from({ length: req.rolloutsPerHarness }, (_, i) => {
      const index = h * req.rolloutsPerHarness + i;
      return {
        v: 1 as const,
        id: `${job.id}:${index}`,
        type: "rollout.requested" as const,
        body: { jobId: job.id, index, poolId: req.poolId, harnessId, taskId: task.id, seed: hash32(`${job.id}:${index}`), policyId: "default" },
      };
    }),
  );
  await deps.dispatch.send(messages);
  return job;
}

/** The dispatch use-case: one rollout, stored once per (job, index) even under redelivery. */
export async function runRequestedRollout(
  body: RolloutRequestedBody,
  deps: { pools: PoolStore; tasks: TaskSource; rollouts: RolloutStore; policies: PolicyEndpoints },
): Promise<"stored" | "duplicate"> {
  if (await deps.rollouts.has(body.jobId, body.index)) return "duplicate";
  const pool = await deps.pools.get(body.poolId);
  if (!pool) throw new NotFoundError("pool", body.poolId);
  const task = body.task ?? (await deps.tasks.get(body.taskId));
  if (!task) throw new NotFoundError("task", body.taskId);
  const run = deps.policies.runner(body.policyId, body.policyVersion);
  const rollout = await run(task, harnessById(pool, body.harnessId), body.seed);
  return deps.rollouts.put(body.jobId, body.index, rollout);
}

export const RescueStatus = z.object({
  job: z.object({ id: z.string(), poolId: z.string(), taskId: z.string(), chosen: z.array(z.string()), expected: z.number() }),
  status: z.enum(["running", "done"]),
  completed: z.number().int(),
  rescued: z.boolean(),
  rollouts: z.array(z.object({ index: z.number(), harnessId: z.string(), reward: z.number(), success: z.boolean(), failureTags: z.array(z.string()), steps: z.number() })),
});
export type RescueStatus = z.infer<typeof RescueStatus>;

/** Status of a rescue, derived from the stored rollouts (no counters to drift). */
export async function rescueStatus(id: string, deps: { jobs: RescueJobStore; rollouts: RolloutStore }): Promise<RescueStatus> {
  const job = await deps.jobs.get(id);
  if (!job) throw new NotFoundError("rescue", id);
  const stored = await deps.rollouts.list(id);
  const rewards = stored.map((r) => r.rollout.reward);
  return {
    job: { id: job.id, poolId: job.poolId, taskId: job.taskId, chosen: job.chosen, expected: job.expected },
    status: stored.length >= job.expected ? "done" : "running",
    completed: stored.length,
    rescued: rewards.some((r) => r !== rewards[0]) || rewards.some((r) => r > 0),
    rollouts: stored.map(({ index, rollout }) => ({
      index,
      harnessId: rollout.harnessId,
      reward: rollout.reward,
      success: rollout.success,
      failureTags: rollout.failureTags,
      steps: rollout.steps.length,
    })),
  };
}
