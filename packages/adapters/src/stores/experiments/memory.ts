import { type KeyPage, type KeyPageRequest, pageOfKey } from "@harness-s/core";
import type { ExperimentRecord, ExperimentStore } from "@harness-s/core/experiment";
import { MemoryLeasedJobs } from "../leased-jobs/memory.ts";

/** Experiment runs in memory: leased jobs, listed by key. */
export class MemoryExperimentStore extends MemoryLeasedJobs<ExperimentRecord> implements ExperimentStore {
  constructor() {
    super("experiment");
  }

  async listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<ExperimentRecord>> {
    const mine = pageOfKey(
      this.all().filter((r) => r.keyId === keyId),
      page,
    );
    return { ...mine, items: await Promise.all(mine.items.map(async (r) => (await this.get(r.id))!)) };
  }
}
