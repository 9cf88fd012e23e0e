import { runRequestedRollout, type PolicyEndpoints, type PoolStore, type RolloutStore, type TaskSource } from "@harness-s/core";
import { createSqsWorker } from "../sqs-worker.ts";

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
  log?: (line: string) => void;
}) {
  return createSqsWorker("dispatch", "rollout.requested", (body) => runRequestedRollout(body, deps), deps.log);
}
