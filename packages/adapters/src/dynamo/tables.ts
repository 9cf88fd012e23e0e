import {
  CreateTableCommand,
  DescribeTableCommand,
  type DescribeTableCommandOutput,
  type DynamoDBClient,
  UpdateTableCommand,
} from "@aws-sdk/client-dynamodb";
import { tableSpecs, type TableNames, type TableSpec } from "./table-specs.ts";

export * from "./table-specs.ts";

/**
 * A spec's key schema, attribute definitions and global indexes (each projecting every attribute), as CreateTable takes
 * them.
 */
export function tableKeys(spec: TableSpec) {
  const schema = (hash: string, range?: string) => [
    { AttributeName: hash, KeyType: "HASH" as const },
    ...(range ? [{ AttributeName: range, KeyType: "RANGE" as const }] : []),
  ];
  const names = [
    spec.partitionKey,
    spec.sortKey,
    ...(spec.indexes ?? []).flatMap((i) => [i.partitionKey, i.sortKey]),
  ].filter((n): n is string => n !== undefined);
  return {
    KeySchema: schema(spec.partitionKey, spec.sortKey),
    AttributeDefinitions: [...new Set(names)].map((AttributeName) => ({ AttributeName, AttributeType: "S" as const })),
    ...(spec.indexes?.length
      ? {
          GlobalSecondaryIndexes: spec.indexes.map((i) => ({
            IndexName: i.name,
            KeySchema: schema(i.partitionKey, i.sortKey),
            Projection: { ProjectionType: "ALL" as const },
          })),
        }
      : {}),
  };
}

/**
 * Creates every table (on-demand billing) if it does not exist yet, and the global indexes a table made before them
 * lacks.
 */
export async function createTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  for (const spec of tableSpecs) {
    const TableName = names[spec.name];
    let existing: DescribeTableCommandOutput | undefined;
    try {
      existing = await client.send(new DescribeTableCommand({ TableName }));
    } catch (err) {
      if ((err as { name?: string }).name !== "ResourceNotFoundException") throw err;
    }
    if (existing) {
      await addMissingIndexes(client, TableName, spec, existing);
      continue;
    }
    await client.send(new CreateTableCommand({ TableName, ...tableKeys(spec), BillingMode: "PAY_PER_REQUEST" }));
  }
}

/** A table made before its spec declared an index gets it (one UpdateTable per index). */
async function addMissingIndexes(
  client: DynamoDBClient,
  TableName: string,
  spec: TableSpec,
  existing: DescribeTableCommandOutput,
): Promise<void> {
  const have = new Set((existing.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  const keys = tableKeys(spec);
  for (const index of keys.GlobalSecondaryIndexes ?? []) {
    if (have.has(index.IndexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName,
        AttributeDefinitions: keys.AttributeDefinitions,
        GlobalSecondaryIndexUpdates: [{ Create: index }],
      }),
    );
  }
}
