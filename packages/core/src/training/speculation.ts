import type { HarnessSpec } from "../harness/spec.ts";
import type { RolloutRunner } from "../ports.ts";
import type { Rollout } from "../rollout/types.ts";
import type { Task } from "../task.ts";

// Rollouts started ahead of the code that will ask for them. A rollout is a function of its task,
// harness, seed and the policy's version, so one started early for the same three is the one the
// asker would have got; a guess that turns out wrong costs compute and nothing else.

/** A runner that hands out rollouts started ahead of time, each once, and runs any other afresh. */
export interface SpeculativeRunner {
  /** Starts a rollout now for whoever asks for the same task, harness and seed later. */
  prefetch: RolloutRunner;
  /** A started rollout for these three when there is one left, else a fresh one. */
  run: RolloutRunner;
  /** Waits for every started rollout nobody took (so none runs on after the policy changes); their number. */
  settle(): Promise<number>;
}

/**
 * @example
 * const ahead = speculativeRunner(runRollout);
 * void ahead.prefetch(task, sibling, 17);
 * const r = await ahead.run(task, sibling, 17); // the prefetched rollout
 * const wasted = await ahead.settle();
 */
export function speculativeRunner(runRollout: RolloutRunner): SpeculativeRunner {
  const started = new Map<string, Promise<Rollout>[]>();
  const key = (task: Task, harness: HarnessSpec, seed: number) => `${task.id}\u0000${harness.id}\u0000${seed}`;
  return {
    prefetch: (task, harness, seed) => {
      const rollout = runRollout(task, harness, seed);
      rollout.catch(() => undefined);
      const k = key(task, harness, seed);
      started.set(k, [...(started.get(k) ?? []), rollout]);
      return rollout;
    },
    run: (task, harness, seed) => started.get(key(task, harness, seed))?.shift() ?? runRollout(task, harness, seed),
    settle: async () => {
      const left = [...started.values()].flat();
      started.clear();
      await Promise.allSettled(left);
      return left.length;
    },
  };
}
