import type { Rollout } from "./types.ts";

/** Rollouts with their full trajectories, keyed by (job, index); writing an existing key keeps the first. */
export interface RolloutStore {
  put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate">;
  list(jobId: string): Promise<{ index: number; rollout: Rollout }[]>;
  has(jobId: string, index: number): Promise<boolean>;
  get(jobId: string, index: number): Promise<Rollout | undefined>;
  /** The stored ones among `indexes` (one round trip per 100 on DynamoDB). */
  getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>>;
}
