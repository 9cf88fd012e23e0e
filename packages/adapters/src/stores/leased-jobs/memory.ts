import { ConflictError, type LeasedJob, type LeasedJobStore } from "@harness-s/core";
import { frozenCopy } from "../frozen-copy.ts";

/**
 * Leased jobs in memory (experiments, pool evolutions: the embedded default and unit tests):
 * reads are copies; a key's cancel is kept apart from the record, so a worker's save never clears it.
 */
export class MemoryLeasedJobs<R extends LeasedJob> implements LeasedJobStore<R> {
  protected readonly jobs = new Map<string, R>();
  private readonly cancels = new Set<string>();

  constructor(private readonly what: string) {}

  async create(record: R): Promise<void> {
    if (this.jobs.has(record.id)) throw new ConflictError(`${this.what} ${record.id} exists`);
    this.jobs.set(record.id, frozenCopy(record));
  }

  async get(id: string): Promise<R | undefined> {
    const found = this.jobs.get(id);
    return found && { ...structuredClone(found), ...(this.cancels.has(id) ? { cancelRequested: true } : {}) };
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<R | undefined> {
    const found = this.jobs.get(id);
    if (!found || !(found.status === "queued" || (found.status === "running" && (found.leaseUntil ?? 0) < now)))
      return undefined;
    this.jobs.set(id, frozenCopy({ ...structuredClone(found), status: "running", leaseUntil, updatedAt: now }));
    return this.get(id);
  }

  async save(record: R): Promise<void> {
    this.jobs.set(record.id, frozenCopy(record));
  }

  async requestCancel(id: string, now: number): Promise<R | undefined> {
    const found = this.jobs.get(id);
    if (!found) return undefined;
    if (found.status === "queued")
      this.jobs.set(
        id,
        frozenCopy({
          ...structuredClone(found),
          status: "cancelled",
          updatedAt: now,
          leaseUntil: undefined,
          progress: { ...found.progress, label: "cancelled" },
        }),
      );
    if (found.status === "queued" || found.status === "running") this.cancels.add(id);
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    return this.cancels.has(id);
  }

  /** Every job, as stored (a list by key reads them). */
  protected all(): R[] {
    return [...this.jobs.values()];
  }
}
