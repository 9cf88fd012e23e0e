import { GetCommand, PutCommand, ScanCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type ApiKeyRecord, type ApiKeyStore, KeyAccount, accountOf, presented } from "@harness-s/core/access";
import { ConflictError } from "@harness-s/core";
import { aws } from "../../errors.ts";
import { allItems } from "../../dynamo/paginate.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/**
 * Keys on two tables: each key's account on `Keys` (by id, written under its version), and each
 * secret's hash on `ApiKeys` pointing at its key (a hash is never moved to another key).
 */
export class DynamoApiKeyStore implements ApiKeyStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(key: ApiKeyRecord): Promise<void> {
    const account = accountOf(key);
    await this.index(account);
    await aws("put api key", () => this.doc.send(new PutCommand({ TableName: this.tables.Keys, Item: account })));
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const out = await aws("find api key", () => this.doc.send(new GetCommand({ TableName: this.tables.ApiKeys, Key: { hash } })));
    const id = out.Item?.id;
    if (typeof id !== "string") return undefined;
    const account = await this.get(id);
    const secret = account?.secrets.find((s) => s.hash === hash);
    return account && secret ? presented(account, secret) : undefined;
  }

  async get(id: string): Promise<KeyAccount | undefined> {
    const out = await aws("read api key", () => this.doc.send(new GetCommand({ TableName: this.tables.Keys, Key: { id }, ConsistentRead: true })));
    return out.Item ? KeyAccount.parse(out.Item) : undefined;
  }

  async list(): Promise<KeyAccount[]> {
    const items = await allItems("list api keys", (start) => this.doc.send(new ScanCommand({ TableName: this.tables.Keys, ConsistentRead: true, ExclusiveStartKey: start })));
    return items.map((i) => KeyAccount.parse(i));
  }

  async save(account: KeyAccount, expected: number | undefined): Promise<void> {
    const item = KeyAccount.parse(account);
    await this.index(item);
    await aws("save api key", () =>
      this.doc.send(
        new PutCommand({
          TableName: this.tables.Keys,
          Item: item,
          ...(expected === undefined
            ? { ConditionExpression: "attribute_not_exists(id)" }
            : { ConditionExpression: "version = :v", ExpressionAttributeValues: { ":v": expected } }),
        }),
      ),
    ).catch((err: unknown) => {
      throw err instanceof ConflictError ? new ConflictError(`key ${account.id} changed meanwhile; read it again`) : err;
    });
  }

  /** Each secret's hash, pointing at its key: written before the account lists it, never taken from another key. */
  private async index(account: KeyAccount): Promise<void> {
    await Promise.all(
      account.secrets.map((s) =>
        aws("index api key secret", () =>
          this.doc.send(
            new PutCommand({
              TableName: this.tables.ApiKeys,
              Item: { hash: s.hash, id: account.id },
              ConditionExpression: "attribute_not_exists(#h) OR id = :id",
              ExpressionAttributeNames: { "#h": "hash" },
              ExpressionAttributeValues: { ":id": account.id },
            }),
          ),
        ),
      ),
    );
  }
}
