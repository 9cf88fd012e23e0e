// DynamoDB plumbing: the tables and their specs, every store over one set of tables.
export {
  tableKeys,
  createTables,
  tableNames,
  type TableSpec,
  type IndexSpec,
  BY_KEY_INDEX,
  tableSpecs,
  type TableNames,
} from "./tables.ts";
export { dynamoStores } from "./all-stores.ts";
