import {
  GetCommand,
  PutCommand,
  ScanCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from "@aws-sdk/lib-dynamodb";
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  KeyAccount,
  accountOf,
  anchorsAdmin,
  presented,
} from "@harness-s/core/access";
import { ConflictError } from "@harness-s/core";
import { LastAdminError } from "@harness-s/core/access";
import { aws, translateAwsError } from "../../errors.ts";
import { allItems } from "../../dynamo/paginate.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** The item on `Keys` that holds the ids of the keys anchoring the deployment (`#` is never in a minted key id). */
export const ADMIN_ANCHORS_ID = "#admin-anchors";

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]["TransactItems"]>[number];

/**
 * Keys on two tables: each key's account on `Keys` (by id, written under its version), and each
 * secret's hash on `ApiKeys` pointing at its key (a hash is never moved to another key). An
 * account, its hashes and the set of anchoring admin keys (one item on `Keys`, {@link ADMIN_ANCHORS_ID})
 * are written in one transaction: the last anchor cannot be taken away by any number of writers
 * at once, and a failed write leaves no hash behind.
 */
export class DynamoApiKeyStore implements ApiKeyStore {
  /**
   * Whether the anchors item is known to be filled (once per process; a deployment older than it fills it from the keys
   * once).
   */
  private anchorsReady = false;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(key: ApiKeyRecord): Promise<void> {
    await this.write(accountOf(key), "any");
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const out = await aws("find api key", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.ApiKeys, Key: { hash } })),
    );
    const id = out.Item?.id;
    if (typeof id !== "string") return undefined;
    const account = await this.get(id);
    const secret = account?.secrets.find((s) => s.hash === hash);
    return account && secret ? presented(account, secret) : undefined;
  }

  async get(id: string): Promise<KeyAccount | undefined> {
    if (id === ADMIN_ANCHORS_ID) return undefined;
    const out = await aws("read api key", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Keys, Key: { id }, ConsistentRead: true })),
    );
    return out.Item ? KeyAccount.parse(out.Item) : undefined;
  }

  async list(): Promise<KeyAccount[]> {
    const items = await allItems("list api keys", (start) =>
      this.doc.send(new ScanCommand({ TableName: this.tables.Keys, ConsistentRead: true, ExclusiveStartKey: start })),
    );
    return items.filter((i) => i.id !== ADMIN_ANCHORS_ID).map((i) => KeyAccount.parse(i));
  }

  async save(account: KeyAccount, expected: number | undefined): Promise<void> {
    await this.write(KeyAccount.parse(account), expected);
  }

  /** The account (at `expected`, or over whatever is there), its hashes and the anchors in one transaction. */
  private async write(account: KeyAccount, expected: number | undefined | "any"): Promise<void> {
    await this.readyAnchors();
    const items: TransactItem[] = [
      { Put: { TableName: this.tables.Keys, Item: account, ...versionCondition(expected) } },
      ...account.secrets.map((s) => ({
        Put: {
          TableName: this.tables.ApiKeys,
          Item: { hash: s.hash, id: account.id },
          ConditionExpression: "attribute_not_exists(#h) OR id = :id",
          ExpressionAttributeNames: { "#h": "hash" },
          ExpressionAttributeValues: { ":id": account.id },
        },
      })),
      { Update: this.anchorUpdate(account) },
    ];
    // Writers at once on the anchors item may be cancelled with a TransactionConflict instead of
    // queued: such a write is tried again (a few times, with a growing jittered pause), a refusal
    // by a condition never.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
        return;
      } catch (err) {
        if (!(conflicted(err) && attempt < KEY_WRITE_ATTEMPTS)) throw refusal(err, account, items.length);
        await new Promise((r) => setTimeout(r, Math.random() * 20 * 2 ** attempt));
      }
    }
  }

  /**
   * Adds the key to the anchors, or takes it out unless it is the last one (the set must exist: {@link readyAnchors}).
   */
  private anchorUpdate(account: KeyAccount) {
    const id = new Set([account.id]);
    const common = {
      TableName: this.tables.Keys,
      Key: { id: ADMIN_ANCHORS_ID },
      ExpressionAttributeNames: { "#a": "anchors" },
    };
    if (anchorsAdmin(account))
      return { ...common, UpdateExpression: "ADD #a :id", ExpressionAttributeValues: { ":id": id } };
    return {
      ...common,
      UpdateExpression: "DELETE #a :id",
      ConditionExpression: "attribute_exists(ready) AND (NOT contains(#a, :key) OR size(#a) > :one)",
      ExpressionAttributeValues: { ":id": id, ":key": account.id, ":one": 1 },
    };
  }

  /**
   * Makes sure the anchors item exists and is filled: a deployment whose keys predate it gets it
   * once, from every key, with a write that only the first filler wins (no key is written until
   * it exists, so none is missed).
   */
  private async readyAnchors(): Promise<void> {
    if (this.anchorsReady) return;
    const out = await aws("read admin anchors", () =>
      this.doc.send(
        new GetCommand({ TableName: this.tables.Keys, Key: { id: ADMIN_ANCHORS_ID }, ConsistentRead: true }),
      ),
    );
    if (!out.Item?.ready) {
      const anchors = (await this.list()).filter(anchorsAdmin).map((a) => a.id);
      await aws("fill admin anchors", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.Keys,
            Item: { id: ADMIN_ANCHORS_ID, ready: true, ...(anchors.length ? { anchors: new Set(anchors) } : {}) },
            ConditionExpression: "attribute_not_exists(ready)",
          }),
        ),
      ).catch((err: unknown) => {
        if (!(err instanceof ConflictError)) throw err; // another process filled it first
      });
    }
    this.anchorsReady = true;
  }
}

/** How often a key's write is tried when other writers' transactions cancel it (TransactionConflict). */
const KEY_WRITE_ATTEMPTS = 6;

const reasonsOf = (err: unknown) =>
  (err as { name?: string }).name === "TransactionCanceledException"
    ? (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons
    : undefined;

/** Whether a transaction was cancelled only because another one held an item, not by any condition. */
const conflicted = (err: unknown) => {
  const reasons = reasonsOf(err);
  return (
    reasons !== undefined &&
    reasons.some((r) => r.Code === "TransactionConflict") &&
    !reasons.some((r) => r.Code === "ConditionalCheckFailed")
  );
};

const versionCondition = (expected: number | undefined | "any") =>
  expected === "any"
    ? {}
    : expected === undefined
      ? { ConditionExpression: "attribute_not_exists(id)" }
      : { ConditionExpression: "version = :v", ExpressionAttributeValues: { ":v": expected } };

/**
 * Which part of a key's transaction refused it: the account's version, a secret another key holds, or the last anchor.
 */
function refusal(err: unknown, account: KeyAccount, items: number): Error {
  const reasons = reasonsOf(err);
  if (!reasons) return translateAwsError(err, "save api key");
  const failed = (i: number) => reasons[i]?.Code === "ConditionalCheckFailed";
  if (failed(0)) return new ConflictError(`key ${account.id} changed meanwhile; read it again`);
  if (failed(items - 1)) return new LastAdminError(account.id);
  if (reasons.some((r) => r.Code === "ConditionalCheckFailed"))
    return new ConflictError(`a secret of key ${account.id} belongs to another key`);
  return new ConflictError(
    `key ${account.id}: the write was cancelled (${reasons.map((r) => r.Code ?? "None").join(", ")}); try again`,
  );
}
