import { RolloutTimeoutError } from "./errors.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";
import type { Clock } from "../util/clock.ts";
import { envelope, type Envelope, type Payer } from "../messaging/envelope.ts";
import "../dispatch/rollout-request.ts"; // registers rollout.requested
import type { MessageQueue } from "../messaging/queue.ts";
import type { RolloutStore } from "../rollout/store.ts";

export interface QueuedRunnerOptions {
  /** Results land under (jobId, index); indexes count calls in order, so a rerun maps to the same slots. */
  jobId: string;
  /** Who pays for the rollouts (the experiment's key and id). */
  payer?: Payer;
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

  // One poll loop per runner reads every pending slot in one batch, backing off from pollMs to
  // 16 × pollMs while nothing arrives, so many waiters do not flood the store.
  const waiting = new Map<number, { resolve: (r: Rollout) => void; reject: (e: Error) => void; deadline: number }>();
  let polling = false;
  const pollLoop = async () => {
    polling = true;
    let wait = pollMs;
    try {
      while (waiting.size > 0) {
        await opts.clock.sleep(wait);
        const found = await opts.rollouts.getMany(opts.jobId, [...waiting.keys()]);
        for (const [index, rollout] of found) {
          waiting.get(index)?.resolve(rollout);
          waiting.delete(index);
        }
        for (const [index, w] of waiting) {
          if (opts.clock.now() > w.deadline) {
            w.reject(new RolloutTimeoutError(opts.jobId, index, timeoutMs));
            waiting.delete(index);
          }
        }
        wait = found.size > 0 ? pollMs : Math.min(wait * 2, pollMs * 16);
      }
    } catch (err) {
      for (const w of waiting.values()) w.reject(err instanceof Error ? err : new Error(String(err)));
      waiting.clear();
    } finally {
      polling = false;
    }
  };
  const waitFor = (index: number) =>
    new Promise<Rollout>((resolve, reject) => {
      waiting.set(index, { resolve, reject, deadline: opts.clock.now() + timeoutMs });
      if (!polling) void pollLoop();
    });

  return async (task: Task, harness: HarnessSpec, seed: number) => {
    const index = next++;
    outbox.push(
      envelope(
        "rollout.requested",
        `${opts.jobId}:${index}`,
        {
          jobId: opts.jobId,
          index,
          poolId: opts.poolId,
          harnessId: harness.id,
          taskId: task.id,
          seed,
          source: { kind: "service", policyId: opts.policyId, version: opts.policyVersion?.() },
          task,
        },
        opts.payer,
      ),
    );
    await flush();
    return waitFor(index);
  };
}
