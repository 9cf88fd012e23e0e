import { tableSpecs } from "../packages/adapters/src/dynamo/table-specs";

/** One DynamoDB table per spec shared with the local runtime; names are chosen by SST. */
export function storage() {
  const tables = Object.fromEntries(
    tableSpecs.map((spec) => [
      spec.name,
      new sst.aws.Dynamo(spec.name, {
        fields: { [spec.partitionKey]: "string", ...(spec.sortKey ? { [spec.sortKey]: "string" } : {}) },
        primaryIndex: spec.sortKey ? { hashKey: spec.partitionKey, rangeKey: spec.sortKey } : { hashKey: spec.partitionKey },
        ...(spec.ttlAttribute ? { ttl: spec.ttlAttribute } : {}),
      }),
    ]),
  ) as Record<(typeof tableSpecs)[number]["name"], sst.aws.Dynamo>;
  return tables;
}
