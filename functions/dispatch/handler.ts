import { MAX_DEFERRALS, type EnvelopeOf, type MessageQueue } from "@harness-s/core/messaging";
import {
  SLOT_REASON_CHARS,
  deferDelaySeconds,
  runRequestedRollout,
  slotFailure,
  type DispatchDeps,
  type SlotJobs,
} from "@harness-s/core/dispatch";
import { z } from "zod";
import { formatIssues, hash32 } from "@harness-s/core";
import type { EventLogger } from "@harness-s/core/observability";
import { createSqsWorker, type RecordNote, type WorkerLog } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";
import { batchedDispatchStores } from "./batching.ts";

/**
 * How the dispatch worker shares itself between keys: each key's running caller rollouts (`slots`), and the queue a
 * rollout past its key's share waits on.
 */
export type DispatchFairness = NonNullable<DispatchDeps["running"]> & {
  /** The dispatch queue itself: a deferred message is sent to it again, delayed. */
  requeue: MessageQueue;
};

/**
 * The `dispatch` worker: runs one requested rollout at the source the message names (`runners`
 * resolves it) and stores it once per (job, index); redeliveries are no-ops. With `fairness`, a key's caller
 * rollouts past its share of running places (`CALLER_ROLLOUT_FAIRNESS`) are sent again with a
 * growing delay instead of holding a worker, and after `MAX_DEFERRALS` waits their slot fails.
 * Each record's event names its slot, its outcome and, for a slot failed at once, its code and
 * reason (and the rescue's slots when its job was read); a plain `log` hears of such a slot as text.
 * The slots of one batch share their rescue's reads and writes ({@link batchedDispatchStores}).
 *
 * @example
 * const handler = createDispatchHandler({ pools, tasks, rollouts, runners: rolloutRunners({ service: singlePolicyEndpoint(runRollout) }) });
 */
export function createDispatchHandler(
  given: Omit<DispatchDeps, "log" | "running"> & {
    fairness?: DispatchFairness;
    /**
     * Receives before SQS moves a message to the DLQ (the queue's maxReceiveCount); with `jobs`, a slot given up on
     * then is recorded on its rescue.
     */
    maxReceives?: number;
    log?: WorkerLog;
    logger?: EventLogger;
    metering?: WorkerMetering;
  },
) {
  // A batch's slots share their rescue's reads and writes (see batchedDispatchStores).
  const deps = batchedDispatchStores(given);
  const jobs = deps.jobs;
  const lastTry =
    jobs && deps.maxReceives
      ? {
          maxReceives: deps.maxReceives,
          giveUp: (body: { jobId: string; index: number }, _id: string, err: unknown) =>
            jobs.recordFailure(body.jobId, body.index, slotFailure(err)),
        }
      : undefined;
  // With events, a slot failed at once is told in its record's event; a plain line sink hears of it as before.
  const text = deps.logger || deps.log?.events ? undefined : deps.log;
  const fairness = deps.fairness;
  return createSqsWorker(
    "dispatch",
    "rollout.requested",
    async (body, _id, envelope, note) => {
      note({ slot: body.index });
      const noted = jobs && notingSlots(jobs, note);
      const result = await runRequestedRollout(body, {
        ...deps,
        jobs: noted,
        ...(text ? { log: text } : {}),
        ...(fairness ? { running: fairness } : {}),
      });
      if (result === "deferred" && fairness) await waitItsTurn(envelope, fairness.requeue, noted);
      return result;
    },
    {
      ...(deps.log ? { log: deps.log } : {}),
      ...(deps.logger ? { logger: deps.logger } : {}),
      lastTry,
      metering: deps.metering,
      ...(jobs ? { malformed: failItsSlot(jobs) } : {}),
    },
  );
}

/** What a malformed `rollout.requested` still tells: its rescue and slot, when those parts are readable. */
const SlotOfMalformed = z.object({
  type: z.literal("rollout.requested"),
  body: z.object({ jobId: z.string().min(1).max(400), index: z.number().int().min(0).max(1_000_000) }),
});

/**
 * A `rollout.requested` that is not a valid message can never run: its slot is failed at once
 * (VALIDATION_FAILED, with what was wrong), so its rescue ends instead of waiting out its hold;
 * the message itself goes on to the DLQ.
 */
const failItsSlot = (jobs: SlotJobs) => async (json: unknown, err: unknown) => {
  const slot = SlotOfMalformed.safeParse(json);
  if (!slot.success) return;
  const what = err instanceof z.ZodError ? formatIssues(err.issues).slice(0, 5).join("; ") : String(err);
  await jobs.recordFailure(slot.data.body.jobId, slot.data.body.index, {
    code: "VALIDATION_FAILED",
    reason: `the rollout's message is malformed: ${what}`.slice(0, SLOT_REASON_CHARS),
  });
};

/**
 * The rescue jobs as one record sees them: the rescue's slots when its job is read, and a slot's failure code and
 * reason when it is recorded, noted on its event.
 */
function notingSlots(jobs: SlotJobs, note: RecordNote): SlotJobs {
  return {
    get: async (id) => {
      const job = await jobs.get(id);
      if (job) note({ rescueSlots: job.expected });
      return job;
    },
    recordFailure: (id, index, failure) => {
      note({ errorCode: failure.code, reason: failure.reason });
      return jobs.recordFailure(id, index, failure);
    },
    addSpend: (id, spend, slot) => jobs.addSpend(id, spend, slot),
  };
}

/**
 * Every this many waits, a waiting rollout reads its rescue: one cancelled meanwhile stops waiting (and costing its key
 * requests).
 */
export const CANCEL_CHECK_EVERY = 4;

/**
 * Sends a deferred rollout again, later; one deferred too often fails its slot (CONCURRENCY_LIMIT), one of a cancelled
 * rescue is dropped.
 */
async function waitItsTurn(
  envelope: EnvelopeOf<"rollout.requested">,
  requeue: MessageQueue,
  jobs: SlotJobs | undefined,
): Promise<void> {
  const deferrals = (envelope.deferrals ?? 0) + 1;
  if (deferrals % CANCEL_CHECK_EVERY === 0 && (await jobs?.get(envelope.body.jobId))?.cancelledAt !== undefined) return;
  if (deferrals > MAX_DEFERRALS) {
    const reason = `waited ${MAX_DEFERRALS} times for one of its key's running places`;
    await jobs?.recordFailure(envelope.body.jobId, envelope.body.index, { code: "CONCURRENCY_LIMIT", reason });
    return;
  }
  await requeue.send([{ ...envelope, deferrals }], {
    delaySeconds: deferDelaySeconds(deferrals - 1, hash32(`${envelope.id}#${deferrals}`) / 2 ** 32),
  });
}
