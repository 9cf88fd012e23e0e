import { ConflictError } from "@harness-s/core";
import type { PoolEvolutionRecord, PoolEvolutionStore } from "@harness-s/core/pools";
import { frozenCopy } from "../frozen-copy.ts";

/** Pool evolution jobs in memory (the API's tests, one-process stacks); reads are copies. */
export class MemoryPoolEvolutionStore implements PoolEvolutionStore {
  private readonly jobs = new Map<string, PoolEvolutionRecord>();

  async create(record: PoolEvolutionRecord): Promise<void> {
    if (this.jobs.has(record.id)) throw new ConflictError(`pool evolution ${record.id} exists`);
    this.jobs.set(record.id, frozenCopy(record));
  }

  async get(id: string): Promise<PoolEvolutionRecord | undefined> {
    const found = this.jobs.get(id);
    return found && structuredClone(found);
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<PoolEvolutionRecord | undefined> {
    const found = this.jobs.get(id);
    if (!found || !(found.status === "queued" || (found.status === "running" && (found.leaseUntil ?? 0) < now))) return undefined;
    this.jobs.set(id, frozenCopy({ ...structuredClone(found), status: "running", leaseUntil }));
    return this.get(id);
  }

  async save(record: PoolEvolutionRecord): Promise<void> {
    const asked = this.jobs.get(record.id)?.cancelRequested;
    this.jobs.set(record.id, frozenCopy({ ...record, ...(asked ? { cancelRequested: true } : {}) }));
  }

  async requestCancel(id: string, now: number): Promise<PoolEvolutionRecord | undefined> {
    const found = this.jobs.get(id);
    if (!found) return undefined;
    if (found.status === "queued")
      this.jobs.set(id, frozenCopy({ ...structuredClone(found), status: "cancelled", updatedAt: now, progress: { ...found.progress, label: "cancelled" } }));
    else if (found.status === "running") this.jobs.set(id, frozenCopy({ ...structuredClone(found), cancelRequested: true }));
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    return this.jobs.get(id)?.cancelRequested === true;
  }
}
