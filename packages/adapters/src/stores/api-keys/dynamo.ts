import { GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ApiKeyRecord, type ApiKeyStore } from "@harness-s/core/access";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

export class DynamoApiKeyStore implements ApiKeyStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(key: ApiKeyRecord): Promise<void> {
    await aws("put api key", () => this.doc.send(new PutCommand({ TableName: this.tables.ApiKeys, Item: ApiKeyRecord.parse(key) })));
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const out = await aws("find api key", () => this.doc.send(new GetCommand({ TableName: this.tables.ApiKeys, Key: { hash } })));
    return out.Item ? ApiKeyRecord.parse(out.Item) : undefined;
  }
}
