import { DeleteCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { PolicyEndpointRecord, type PolicyEndpointStore } from "@harness-s/core";
import { aws } from "../errors.ts";
import type { TableNames } from "./tables.ts";

/** Registered policy endpoints, one item per (key, id): a key's query never reads another key's. */
export class DynamoPolicyEndpointStore implements PolicyEndpointStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(record: PolicyEndpointRecord): Promise<void> {
    await aws("put policy endpoint", () => this.doc.send(new PutCommand({ TableName: this.tables.PolicyEndpoints, Item: PolicyEndpointRecord.parse(record) })));
  }

  async get(keyId: string, id: string): Promise<PolicyEndpointRecord | undefined> {
    const out = await aws("get policy endpoint", () => this.doc.send(new GetCommand({ TableName: this.tables.PolicyEndpoints, Key: { keyId, id }, ConsistentRead: true })));
    return out.Item ? PolicyEndpointRecord.parse(out.Item) : undefined;
  }

  async list(keyId: string): Promise<PolicyEndpointRecord[]> {
    const out = await aws("list policy endpoints", () =>
      this.doc.send(
        new QueryCommand({ TableName: this.tables.PolicyEndpoints, KeyConditionExpression: "keyId = :k", ExpressionAttributeValues: { ":k": keyId }, ConsistentRead: true }),
      ),
    );
    return (out.Items ?? []).map((i) => PolicyEndpointRecord.parse(i));
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    const out = await aws("delete policy endpoint", () =>
      this.doc.send(new DeleteCommand({ TableName: this.tables.PolicyEndpoints, Key: { keyId, id }, ReturnValues: "ALL_OLD" })),
    );
    return out.Attributes !== undefined;
  }
}
