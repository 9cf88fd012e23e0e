import { HarnessSError } from "../errors.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import type { Clock } from "../util/clock.ts";
import type { Envelope } from "./messages.ts";
import type { MessageQueue, RolloutStore } from "./ports.ts";

/** A queued rollout did not come back in time (a stuck worker, a message in the DLQ). */
export class RolloutTimeoutError extends HarnessSError {
  constructor(jobId: string, index: number, ms: number) {
    super("ROLLOUT_TIMEOUT", `rollout ${jobId}/${index} did not complete within ${ms} ms (is the dispatch worker running? check its DLQ)`);
  }
}

export interface QueuedRunnerOptions {
  /** Results land under (jobId, index); indexes count calls in order, so a rerun maps to the same slots. */
  jobId: string;
  policyId: string;
  poolId: string;
  /** The policy version to request (the endpoint refuses another one). */
  policyVersion?: () => number;
  dispatch: MessageQueue;
  rollouts: RolloutStore;
  clock: Clock;
  pollMs?: number;
  timeoutMs?: number;
}

/**
 * A {@link RolloutRunner} that runs nothing itself: each call becomes a `rollout.requested`
 * message on the dispatch queue (calls made in the same tick go out as one batch), and resolves
 * when the dispatch worker has stored the rollout.
 *
 * @example
 * const run = queuedRolloutRunner({ jobId: "exp1/1/grpo", policyId: "exp1/1/grpo", poolId, dispatch, rollouts, clock });
 * const rollout = await run(task, pool.base, 7);
 */
export function queuedRolloutRunner(opts: QueuedRunnerOptions): RolloutRunner {
  const pollMs = opts.pollMs ?? 10;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  let next = 0;
  let outbox: Envelope[] = [];
  let flushing: Promise<void> | undefined;

  const flush = () => {
    flushing ??= Promise.resolve().then(async () => {
      const batch = outbox;
      outbox = [];
      flushing = undefined;
      await opts.dispatch.send(batch);
    });
    return flushing;
  };

  const waitFor = async (index: number): Promise<Rollout> => {
    const deadline = opts.clock.now() + timeoutMs;
    for (;;) {
      const rollout = await opts.rollouts.get(opts.jobId, index);
      if (rollout) return rollout;
      if (opts.clock.now() > deadline) throw new RolloutTimeoutError(opts.jobId, index, timeoutMs);
      await opts.clock.sleep(pollMs);
    }
  };

  return async (task: Task, harness: HarnessSpec, seed: number) => {
    const index = next++;
    outbox.push({
      v: 1,
      id: `${opts.jobId}:${index}`,
      type: "rollout.requested",
      body: {
        jobId: opts.jobId,
        index,
        poolId: opts.poolId,
        harnessId: harness.id,
        taskId: task.id,
        seed,
        policyId: opts.policyId,
        policyVersion: opts.policyVersion?.(),
        task,
      },
    });
    await flush();
    return waitFor(index);
  };
}
