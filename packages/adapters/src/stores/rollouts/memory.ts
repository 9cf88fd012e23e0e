import { summaryOf, type Rollout, type RolloutStore, type RolloutSummary } from "@harness-s/core";
import { frozenCopy } from "../frozen-copy.ts";

export class MemoryRolloutStore implements RolloutStore {
  private readonly jobs = new Map<string, Map<number, Rollout>>();

  async put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate"> {
    const job = this.jobs.get(jobId) ?? new Map<number, Rollout>();
    if (job.has(index)) return "duplicate";
    job.set(index, frozenCopy(rollout));
    this.jobs.set(jobId, job);
    return "stored";
  }

  async has(jobId: string, index: number): Promise<boolean> {
    return this.jobs.get(jobId)?.has(index) ?? false;
  }

  async get(jobId: string, index: number): Promise<Rollout | undefined> {
    return this.jobs.get(jobId)?.get(index);
  }

  async getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>> {
    const job = this.jobs.get(jobId);
    return new Map(indexes.flatMap((i) => (job?.has(i) ? [[i, job.get(i)!] as const] : [])));
  }

  async list(jobId: string) {
    return [...(this.jobs.get(jobId) ?? new Map<number, Rollout>()).entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, rollout]) => ({ index, rollout }));
  }

  async summaries(jobId: string): Promise<RolloutSummary[]> {
    return (await this.list(jobId)).map(({ index, rollout }) => summaryOf(index, rollout));
  }
}
