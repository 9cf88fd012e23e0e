import type { ApiKeyRecord, ApiKeyStore } from "@harness-s/core/access";

export class MemoryApiKeyStore implements ApiKeyStore {
  private readonly byHash = new Map<string, ApiKeyRecord>();

  async put(key: ApiKeyRecord): Promise<void> {
    this.byHash.set(key.hash, { ...key });
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const k = this.byHash.get(hash);
    return k && { ...k };
  }
}
