import type { Rollout } from "./types.ts";

/** What a rescue's status shows of one stored rollout (not its trajectory). */
export interface RolloutSummary {
  index: number;
  harnessId: string;
  reward: number;
  success: boolean;
  failureTags: string[];
  steps: number;
}

/** A rollout's {@link RolloutSummary}. */
export const summaryOf = (index: number, rollout: Rollout): RolloutSummary => ({
  index,
  harnessId: rollout.harnessId,
  reward: rollout.reward,
  success: rollout.success,
  failureTags: [...rollout.failureTags],
  steps: rollout.steps.length,
});

/** Rollouts with their full trajectories, keyed by (job, index); writing an existing key keeps the first. */
export interface RolloutStore {
  put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate">;
  list(jobId: string): Promise<{ index: number; rollout: Rollout }[]>;
  /**
   * What {@link list} would give, summarised, in index order, without reading the trajectories where the store keeps a
   * summary beside them.
   */
  summaries(jobId: string): Promise<RolloutSummary[]>;
  has(jobId: string, index: number): Promise<boolean>;
  get(jobId: string, index: number): Promise<Rollout | undefined>;
  /** The stored ones among `indexes` (one round trip per 100 on DynamoDB). */
  getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>>;
}
