import type { RolloutStore } from "../rollout/store.ts";

/**
 * Where a status read's long poll (`?wait`) hears that a rescue moved: `watch` calls `wake` with the
 * slot's index each time a rollout of rescue `id` is stored, until the returned function is
 * called. Where the API and the dispatch workers share a process (`harness-s serve`), the workers
 * tell it each rollout they store ({@link LocalRescueProgress}, `hears`: a long poll then looks
 * when told, and otherwise only every `RESCUE_WAIT.heardLooksMs`); elsewhere (the cloud: a Lambda
 * apart from the workers) nothing tells, and the long poll finds progress by looking ({@link RESCUE_WAIT}).
 */
export interface RescueProgress {
  /**
   * Whether the rollouts this process's workers store are told (what is stored elsewhere is still found by looking).
   */
  readonly hears: boolean;
  watch(id: string, wake: (index: number) => void): () => void;
}

/** Nothing tells: a long poll looks for progress itself. */
export const unheardProgress: RescueProgress = { hears: false, watch: () => () => undefined };

/**
 * One process's rescues' progress: {@link stored} wakes the status reads watching that rescue.
 *
 * @example
 * const progress = new LocalRescueProgress();
 * const stop = progress.watch("rsc_1", (index) => console.log(`slot ${index} stored`));
 * progress.stored("rsc_1", 0); stop();
 */
export class LocalRescueProgress implements RescueProgress {
  readonly hears = true;
  private readonly watchers = new Map<string, Set<(index: number) => void>>();

  watch(id: string, wake: (index: number) => void): () => void {
    const set = this.watchers.get(id) ?? new Set();
    this.watchers.set(id, set);
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.watchers.get(id) === set) this.watchers.delete(id);
    };
  }

  /** The rollout of slot `index` of rescue `id` was stored. */
  stored(id: string, index: number): void {
    for (const wake of [...(this.watchers.get(id) ?? [])]) wake(index);
  }
}

/**
 * A rollout store that tells `tell(jobId, index)` each rollout it stores (a duplicate tells
 * nothing), once the write is done: what a status read woken by it reads is already there.
 *
 * @example
 * const rollouts = tellingStores(stores.rollouts, (id, index) => progress.stored(id, index));
 */
export function tellingStores(store: RolloutStore, tell: (jobId: string, index: number) => void): RolloutStore {
  return {
    put: async (jobId, index, rollout) => {
      const outcome = await store.put(jobId, index, rollout);
      if (outcome === "stored") tell(jobId, index);
      return outcome;
    },
    list: (jobId) => store.list(jobId),
    summaries: (jobId) => store.summaries(jobId),
    has: (jobId, index) => store.has(jobId, index),
    get: (jobId, index) => store.get(jobId, index),
    getMany: (jobId, indexes) => store.getMany(jobId, indexes),
  };
}
