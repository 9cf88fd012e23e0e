import type { ApiKeyRecord, ApiKeyStore, KeyAccount } from "@harness-s/core/access";
import { ReadCache, type CacheOptions } from "../read-cache.ts";

/**
 * API keys found by their secret's hash, kept for a short TTL: an authorised request costs no
 * store read while its key is cached. A key changed through this store is seen at once; one changed
 * elsewhere (another API instance) is seen once its entry expires, at most `ttlMs` later
 * (`KEY_CHANGE_SECONDS`); an unknown hash is never cached.
 *
 * @example
 * const keys = new CachedKeyStore(new DynamoApiKeyStore(doc, tables), { ttlMs: KEY_CHANGE_SECONDS * 1000, clock: systemClock });
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

  get(id: string): Promise<KeyAccount | undefined> {
    return this.inner.get(id);
  }

  list(): Promise<KeyAccount[]> {
    return this.inner.list();
  }

  async save(account: KeyAccount, expected: number | undefined): Promise<void> {
    await this.inner.save(account, expected);
    for (const s of account.secrets) this.cache.drop(s.hash);
  }
}
