import type { RolloutStore } from "@harness-s/core";
import type { SlotJobs } from "@harness-s/core/dispatch";
import { createSqsWorker, type WorkerLog } from "../sqs-worker.ts";

/** Why a slot whose message reached the DLQ is failed: its deliveries each ended with their process. */
export const lostSlotReason = (receives: number) =>
  `its rollout was delivered ${receives} times and never finished: each time its dispatch process ended first ` +
  "(killed, out of memory, or past its timeout)";

/**
 * The dispatch DLQ's consumer: a `rollout.requested` there was delivered the queue's maxReceiveCount times without an
 * answer (a failure on its last delivery is recorded by the dispatch worker itself; what reaches this is a slot whose
 * process died each time). Its rescue's slot is failed with ROLLOUT_LOST unless it was stored meanwhile, so the rescue
 * ends instead of waiting out its hold; a message of no rescue (an experiment's rollout: its runner times out) is
 * dropped. A record this cannot read stays in the DLQ for the operator (its alarm).
 */
export function createDeadLetterHandler(deps: {
  jobs: SlotJobs;
  rollouts: Pick<RolloutStore, "has">;
  maxReceives: number;
  log?: WorkerLog;
}) {
  return createSqsWorker(
    "dispatch-dlq",
    "rollout.requested",
    async (body) => {
      if (await deps.rollouts.has(body.jobId, body.index)) return "stored";
      await deps.jobs.recordFailure(body.jobId, body.index, {
        code: "ROLLOUT_LOST",
        reason: lostSlotReason(deps.maxReceives),
      });
      return "lost";
    },
    deps.log ? { log: deps.log } : {},
  );
}
