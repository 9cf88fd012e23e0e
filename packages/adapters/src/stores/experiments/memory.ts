import { ConflictError, type KeyPage, type KeyPageRequest, pageOfKey } from "@harness-s/core";
import type { ExperimentRecord, ExperimentStore } from "@harness-s/core/experiment";
import { frozenCopy } from "../frozen-copy.ts";

export class MemoryExperimentStore implements ExperimentStore {
  private readonly runs = new Map<string, ExperimentRecord>();

  async create(record: ExperimentRecord): Promise<void> {
    if (this.runs.has(record.id)) throw new ConflictError(`experiment ${record.id} exists`);
    this.runs.set(record.id, frozenCopy(record));
  }

  private readonly cancels = new Set<string>();

  async get(id: string): Promise<ExperimentRecord | undefined> {
    const r = this.runs.get(id);
    return r && { ...structuredClone(r), ...(this.cancels.has(id) ? { cancelRequested: true } : {}) };
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<ExperimentRecord | undefined> {
    const r = this.runs.get(id);
    if (!r) return undefined;
    const free = r.status === "queued" || (r.status === "running" && (r.leaseUntil ?? 0) < now);
    if (!free) return undefined;
    const claimed = { ...structuredClone(r), status: "running" as const, leaseUntil, updatedAt: now };
    this.runs.set(id, frozenCopy(claimed));
    return this.get(id);
  }

  async save(record: ExperimentRecord): Promise<void> {
    this.runs.set(record.id, frozenCopy(record));
  }

  async requestCancel(id: string, now: number): Promise<ExperimentRecord | undefined> {
    const r = this.runs.get(id);
    if (!r) return undefined;
    if (r.status === "queued") this.runs.set(id, frozenCopy({ ...structuredClone(r), status: "cancelled", updatedAt: now, leaseUntil: undefined }));
    if (r.status === "queued" || r.status === "running") this.cancels.add(id);
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    return this.cancels.has(id);
  }

  async listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<ExperimentRecord>> {
    const mine = pageOfKey(
      [...this.runs.values()].filter((r) => r.keyId === keyId),
      page,
    );
    return { ...mine, items: await Promise.all(mine.items.map(async (r) => (await this.get(r.id))!)) };
  }
}
