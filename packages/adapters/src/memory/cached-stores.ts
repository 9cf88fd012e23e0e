import type { ApiKeyRecord, ApiKeyStore } from "@harness-s/core/access";
import type { Clock, HarnessPool, PoolStore } from "@harness-s/core";
import type { RescueSlots } from "@harness-s/core/rescue";

/** How long a cached entry is served, and by which clock; no TTL: kept for the life of the process. */
export interface CacheOptions {
  ttlMs?: number;
  clock?: Clock;
  /** Entries kept at most (the oldest read goes first); default 1,024. */
  maxEntries?: number;
}

/**
 * Found values by key, each for `ttlMs`: concurrent reads of one key share one store read, and a
 * miss or a failed read is never kept (a value created a moment later is found at once).
 */
class ReadCache<V> {
  private readonly entries = new Map<string, { value: Promise<V | undefined>; at: number }>();

  constructor(private readonly options: CacheOptions) {}

  get(key: string, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = this.options.clock?.now() ?? 0;
    const hit = this.entries.get(key);
    if (hit && (this.options.ttlMs === undefined || now - hit.at < this.options.ttlMs)) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const value = read().then(
      (v) => {
        if (v === undefined) this.forget(key, value);
        return v;
      },
      (err) => {
        this.forget(key, value);
        throw err;
      },
    );
    this.entries.set(key, { value, at: now });
    while (this.entries.size > (this.options.maxEntries ?? 1024)) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }

  drop(key: string): void {
    this.entries.delete(key);
  }

  private forget(key: string, value: Promise<V | undefined>) {
    if (this.entries.get(key)?.value === value) this.entries.delete(key);
  }
}

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

/**
 * API keys found by their secret's hash, kept for a short TTL: an authorised request costs no
 * store read while its key is cached. A key changed through this store is seen at once; one changed
 * or removed elsewhere is seen once its entry expires (at most `ttlMs` later); an unknown hash is never cached.
 *
 * @example
 * const keys = new CachedKeyStore(new DynamoApiKeyStore(doc, tables), { ttlMs: 30_000, clock: systemClock });
 */
export class CachedKeyStore implements ApiKeyStore {
  private readonly cache: ReadCache<ApiKeyRecord>;

  constructor(
    private readonly inner: ApiKeyStore,
    options: CacheOptions,
  ) {
    this.cache = new ReadCache(options);
  }

  async put(key: ApiKeyRecord): Promise<void> {
    await this.inner.put(key);
    this.cache.drop(key.hash);
  }

  findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return this.cache.get(hash, () => this.inner.findByHash(hash));
  }
}

/** How long a key found with every running place taken is answered "full" without asking the store again. */
export const FULL_MEMO_MS = 500;

/**
 * A key's places (`RescueSlots`) where a key just found full is answered full again for
 * {@link FULL_MEMO_MS} without a store read: a key's waiting rollouts come back in waves (a
 * hundred at once), and each costs a deferral, not a read. A place this process frees forgets the
 * memo at once; one freed elsewhere is seen within the memo's time (a rollout waits one more turn).
 *
 * @example
 * const running = new FullSlotsMemo(new DynamoRescueSlots(doc, tables, "runningHolds"), systemClock);
 */
export class FullSlotsMemo implements RescueSlots {
  private readonly fullUntil = new Map<string, number>();
  /** A key's hold in flight: the ones that arrive meanwhile learn "full" from it instead of each reading the store. */
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(
    private readonly inner: RescueSlots,
    private readonly clock: Clock,
    private readonly maxKeys = 1_024,
  ) {}

  async hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    if ((this.fullUntil.get(keyId) ?? 0) > this.clock.now()) return false;
    const before = this.asking.get(keyId);
    if (before && !(await before.catch(() => true))) return false;
    const asked = this.inner.hold(keyId, id, slots, limit, now, until);
    this.asking.set(keyId, asked);
    const held = await asked.finally(() => {
      if (this.asking.get(keyId) === asked) this.asking.delete(keyId);
    });
    this.fullUntil.delete(keyId);
    if (!held) {
      this.fullUntil.set(keyId, this.clock.now() + FULL_MEMO_MS);
      if (this.fullUntil.size > this.maxKeys) this.fullUntil.delete(this.fullUntil.keys().next().value!);
    }
    return held;
  }

  async release(keyId: string, id: string): Promise<void> {
    this.fullUntil.delete(keyId);
    await this.inner.release(keyId, id);
  }

  held(keyId: string, now: number): Promise<number> {
    return this.inner.held(keyId, now);
  }
}
