import type { ApiKeyRecord, ApiKeyStore } from "@harness-s/core/access";
import { ReadCache, type CacheOptions } from "../read-cache.ts";

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
