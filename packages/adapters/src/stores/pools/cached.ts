import type { HarnessPool, PoolStore } from "@harness-s/core";
import { ReadCache, type CacheOptions } from "../read-cache.ts";

/**
 * Pools are immutable under their id, so a process may serve a pool it has read without asking
 * the store again: one store read saved per rollout (dispatch) and per `/v1/route` request.
 *
 * @example
 * const pools = new CachedPoolStore(new DynamoPoolStore(doc, tables), { ttlMs: 60_000, clock: systemClock });
 */
export class CachedPoolStore implements PoolStore {
  private readonly cache: ReadCache<HarnessPool>;

  constructor(
    private readonly inner: PoolStore,
    options: CacheOptions = {},
  ) {
    this.cache = new ReadCache(options);
  }

  put(pool: HarnessPool): Promise<void> {
    return this.inner.put(pool);
  }

  get(id: string): Promise<HarnessPool | undefined> {
    return this.cache.get(id, () => this.inner.get(id));
  }

  list() {
    return this.inner.list();
  }
}
