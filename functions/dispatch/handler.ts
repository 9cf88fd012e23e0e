import { runRequestedRollout, type PoolStore, type RolloutRunner, type RolloutStore, type TaskSource } from "@harness-s/core";
import { createSqsWorker } from "../sqs-worker.ts";

/**
 * The `dispatch` worker: runs one requested rollout against the policy and stores it once per
 * (job, index); redeliveries are no-ops.
 *
 * @example
 * const handler = createDispatchHandler({ pools, tasks, rollouts, runRollout });
 */
export function createDispatchHandler(deps: {
  pools: PoolStore;
  tasks: TaskSource;
  rollouts: RolloutStore;
  runRollout: RolloutRunner;
  log?: (line: string) => void;
}) {
  return createSqsWorker("dispatch", "rollout.requested", (body) => runRequestedRollout(body, deps), deps.log);
}
