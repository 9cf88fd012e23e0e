import { ConflictError } from "@harness-s/core";
import { LastAdminError } from "@harness-s/core/access";
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  KeyAccount,
  accountOf,
  anchorsAdmin,
  presented,
} from "@harness-s/core/access";

export class MemoryApiKeyStore implements ApiKeyStore {
  private readonly accounts = new Map<string, KeyAccount>();
  private readonly idOfHash = new Map<string, string>();
  /** The keys that anchor the deployment (admin, working, no expiry): never emptied by a write once one exists. */
  private readonly anchors = new Set<string>();

  async put(key: ApiKeyRecord): Promise<void> {
    this.write(accountOf(key));
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const account = this.accounts.get(this.idOfHash.get(hash) ?? "");
    const secret = account?.secrets.find((s) => s.hash === hash);
    return account && secret ? presented(structuredClone(account), secret) : undefined;
  }

  async get(id: string): Promise<KeyAccount | undefined> {
    const account = this.accounts.get(id);
    return account && structuredClone(account);
  }

  async list(): Promise<KeyAccount[]> {
    return [...this.accounts.values()].map((a) => structuredClone(a));
  }

  async save(account: KeyAccount, expected: number | undefined): Promise<void> {
    const stored = this.accounts.get(account.id);
    if (expected === undefined ? stored !== undefined : stored?.version !== expected)
      throw new ConflictError(`key ${account.id} changed meanwhile; read it again`);
    if (account.secrets.some((s) => (this.idOfHash.get(s.hash) ?? account.id) !== account.id))
      throw new ConflictError(`a secret of key ${account.id} belongs to another key`);
    this.write(KeyAccount.parse(account));
  }

  /** Checks and writes in one synchronous step (no await between them), as the DynamoDB store's one transaction. */
  private write(account: KeyAccount) {
    const anchors = anchorsAdmin(account);
    if (!anchors && this.anchors.has(account.id) && this.anchors.size === 1) throw new LastAdminError(account.id);
    for (const s of account.secrets) this.idOfHash.set(s.hash, account.id);
    this.accounts.set(account.id, structuredClone(account));
    if (anchors) this.anchors.add(account.id);
    else this.anchors.delete(account.id);
  }
}
