import { ConflictError, type KeyPage, type KeyPageRequest, pageOfKey } from "@harness-s/core";
import type { RolloutSpend } from "@harness-s/core/callers";
import { SlotFailure } from "@harness-s/core/dispatch";
import type { RescueJob, RescueJobStore } from "@harness-s/core/rescue";
import { frozenCopy } from "../frozen-copy.ts";

export class MemoryRescueJobStore implements RescueJobStore {
  private readonly jobs = new Map<string, RescueJob>();
  /** Each job's slots whose spend was added (a slot's spend is added once). */
  private readonly spentSlots = new Map<string, Set<number>>();

  async create(job: RescueJob): Promise<void> {
    if (this.jobs.has(job.id)) throw new ConflictError(`rescue ${job.id} exists`);
    this.jobs.set(job.id, frozenCopy(job));
  }

  async get(id: string): Promise<RescueJob | undefined> {
    return this.jobs.get(id);
  }

  async recordFailure(id: string, index: number, failure: SlotFailure): Promise<void> {
    const job = this.jobs.get(id);
    if (job)
      this.jobs.set(
        id,
        frozenCopy({ ...job, failures: [...(job.failures ?? []), { index, ...SlotFailure.parse(failure) }] }),
      );
  }

  async cancel(id: string, at: number): Promise<void> {
    const job = this.jobs.get(id);
    if (job && job.cancelledAt === undefined) this.jobs.set(id, frozenCopy({ ...job, cancelledAt: at }));
  }

  async addSpend(id: string, spend: RolloutSpend, slot?: number): Promise<void> {
    const job = this.jobs.get(id);
    if (slot !== undefined) {
      const spent = this.spentSlots.get(id) ?? new Set<number>();
      if (spent.has(slot)) return;
      this.spentSlots.set(id, spent.add(slot));
    }
    if (job)
      this.jobs.set(
        id,
        frozenCopy({
          ...job,
          spentPolicyTokens: (job.spentPolicyTokens ?? 0) + spend.policyTokens,
          spentPolicyMs: (job.spentPolicyMs ?? 0) + spend.policyMs,
          spentEnvironmentMs: (job.spentEnvironmentMs ?? 0) + spend.environmentMs,
        }),
      );
  }

  async listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<RescueJob>> {
    return pageOfKey(
      [...this.jobs.values()].filter((j) => j.keyId === keyId),
      page,
    );
  }
}
