import {
  runRequestedRollout,
  slotFailure,
  type CallerPolicies,
  type PolicyEndpoints,
  type PoolStore,
  type RescueJobStore,
  type RolloutStore,
  type TaskSource,
  type UsageMeter,
} from "@harness-s/core";
import { createSqsWorker } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";

/**
 * The `dispatch` worker: runs one requested rollout with the policy the message names and
 * stores it once per (job, index); redeliveries are no-ops.
 *
 * @example
 * const handler = createDispatchHandler({ pools, tasks, rollouts, policies: singlePolicyEndpoint(runRollout) });
 */
export function createDispatchHandler(deps: {
  pools: PoolStore;
  tasks: TaskSource;
  rollouts: RolloutStore;
  policies: PolicyEndpoints;
  /** Rescues with the caller's own policy and environment; without it their rollouts fail with NOT_CONFIGURED. */
  callers?: CallerPolicies;
  /** With `jobs`, a rollout that fails on its last receive is recorded on its rescue, which then ends `failed`; a cancelled rescue's slots are skipped, and a caller rescue's budget is held. */
  jobs?: RescueJobStore;
  /** Where a caller rescue's policy tokens and environment time are metered to its key. */
  meter?: UsageMeter;
  /** Receives before SQS moves a message to the DLQ (the queue's maxReceiveCount). */
  maxReceives?: number;
  log?: (line: string) => void;
  metering?: WorkerMetering;
}) {
  const jobs = deps.jobs;
  const lastTry =
    jobs && deps.maxReceives
      ? { maxReceives: deps.maxReceives, giveUp: (body: { jobId: string; index: number }, _id: string, err: unknown) => jobs.recordFailure(body.jobId, body.index, slotFailure(err)) }
      : undefined;
  const log = deps.log ?? ((line: string) => console.warn(line));
  return createSqsWorker("dispatch", "rollout.requested", (body) => runRequestedRollout(body, { ...deps, log }), { log, lastTry, metering: deps.metering });
}
