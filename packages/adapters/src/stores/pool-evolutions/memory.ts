import type { PoolEvolutionRecord, PoolEvolutionStore } from "@harness-s/core/pools";
import { MemoryLeasedJobs } from "../leased-jobs/memory.ts";

/** Pool evolution jobs in memory (the API's tests, one-process stacks): leased jobs, reads are copies. */
export class MemoryPoolEvolutionStore extends MemoryLeasedJobs<PoolEvolutionRecord> implements PoolEvolutionStore {
  constructor() {
    super("pool evolution");
  }
}
