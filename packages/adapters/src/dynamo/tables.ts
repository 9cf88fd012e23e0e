import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";

/** One table: the single source of truth for the SST stacks and the local runtime. */
export interface TableSpec {
  /** Logical name; the physical name is `${prefix}${name}` locally and chosen by SST in the cloud. */
  name: "Pools" | "Profiles" | "Decisions" | "ApiKeys" | "Usage" | "Processed";
  partitionKey: string;
  sortKey?: string;
  ttlAttribute?: string;
}

export const tableSpecs: readonly TableSpec[] = [
  { name: "Pools", partitionKey: "id" },
  { name: "Profiles", partitionKey: "poolId", sortKey: "harnessId" },
  { name: "Decisions", partitionKey: "id", ttlAttribute: "expiresAt" },
  { name: "ApiKeys", partitionKey: "hash" },
  { name: "Usage", partitionKey: "keyId" },
  /** Ids of queue messages already applied (idempotent consumers); expire after a week. */
  { name: "Processed", partitionKey: "id", ttlAttribute: "expiresAt" },
];

export type TableNames = Record<TableSpec["name"], string>;

export function tableNames(prefix: string): TableNames {
  return Object.fromEntries(tableSpecs.map((t) => [t.name, `${prefix}${t.name}`])) as TableNames;
}

/** Creates every table (on-demand billing) if it does not exist yet. */
export async function createTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  for (const spec of tableSpecs) {
    const TableName = names[spec.name];
    try {
      await client.send(new DescribeTableCommand({ TableName }));
      continue;
    } catch (err) {
      if ((err as { name?: string }).name !== "ResourceNotFoundException") throw err;
    }
    const keys = [{ AttributeName: spec.partitionKey, KeyType: "HASH" as const }];
    const attrs = [{ AttributeName: spec.partitionKey, AttributeType: "S" as const }];
    if (spec.sortKey) {
      keys.push({ AttributeName: spec.sortKey, KeyType: "RANGE" as never });
      attrs.push({ AttributeName: spec.sortKey, AttributeType: "S" });
    }
    await client.send(new CreateTableCommand({ TableName, KeySchema: keys, AttributeDefinitions: attrs, BillingMode: "PAY_PER_REQUEST" }));
  }
}
