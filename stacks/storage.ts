import { tableSpecs } from "../packages/adapters/src/dynamo/table-specs";

/** One DynamoDB table per spec shared with the local runtime (its keys and global indexes); names are chosen by SST. */
export function storage() {
  const tables = Object.fromEntries(
    tableSpecs.map((spec) => [
      spec.name,
      new sst.aws.Dynamo(spec.name, {
        fields: Object.fromEntries(
          [spec.partitionKey, spec.sortKey, ...(spec.indexes ?? []).flatMap((i) => [i.partitionKey, i.sortKey])]
            .filter((f) => f !== undefined)
            .map((f) => [f, "string" as const]),
        ),
        primaryIndex: spec.sortKey
          ? { hashKey: spec.partitionKey, rangeKey: spec.sortKey }
          : { hashKey: spec.partitionKey },
        ...(spec.indexes
          ? {
              globalIndexes: Object.fromEntries(
                spec.indexes.map((i) => [
                  i.name,
                  { hashKey: i.partitionKey, rangeKey: i.sortKey, projection: "all" as const },
                ]),
              ),
            }
          : {}),
        ...(spec.ttlAttribute ? { ttl: spec.ttlAttribute } : {}),
      }),
    ]),
  ) as Record<(typeof tableSpecs)[number]["name"], sst.aws.Dynamo>;
  return tables;
}
