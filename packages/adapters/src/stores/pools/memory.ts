import { ConflictError, HarnessPool, parseOrThrow, type PoolStore } from "@harness-s/core";
import { frozenCopy } from "../frozen-copy.ts";

/** In-memory pools, for the embedded default and unit tests; reads share a frozen snapshot. */
export class MemoryPoolStore implements PoolStore {
  private readonly pools = new Map<string, HarnessPool>();

  async put(pool: HarnessPool): Promise<void> {
    parseOrThrow(HarnessPool, pool, "pool"); // as the DynamoDB store: a pool it could not read back is refused
    const existing = this.pools.get(pool.id);
    // Immutable with its owner: the same pool put again under another owner would take it from its key (or hide a
    // shared one from every other key).
    if (existing && (existing.version !== pool.version || existing.owner !== pool.owner))
      throw new ConflictError(`pool ${pool.id} already exists with another version or owner; pools are immutable`);
    this.pools.set(pool.id, frozenCopy(pool));
  }

  async get(id: string): Promise<HarnessPool | undefined> {
    return this.pools.get(id);
  }

  async list() {
    return [...this.pools.values()]
      .map((p) => ({
        id: p.id,
        version: p.version,
        siblings: p.siblings.length,
        ...(p.owner ? { owner: p.owner } : {}),
      }))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}
