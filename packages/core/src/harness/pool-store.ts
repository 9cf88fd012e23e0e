import type { HarnessPool } from "./pool.ts";

/** Pools are immutable: `put` refuses a different pool under an existing id. */
export interface PoolStore {
  put(pool: HarnessPool): Promise<void>;
  get(id: string): Promise<HarnessPool | undefined>;
  /** Every pool's id, version, number of siblings and owner (none: every key's), by id. */
  list(): Promise<{ id: string; version: string; siblings: number; owner?: string }[]>;
}
