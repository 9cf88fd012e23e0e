import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { tableSpecs, type TableNames } from "./table-specs.ts";

export * from "./table-specs.ts";

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
