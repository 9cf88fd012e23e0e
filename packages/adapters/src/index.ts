export * from "./errors.ts";
export * from "./memory/stores.ts";
export * from "./dynamo/tables.ts";
export * from "./dynamo/stores.ts";
export * from "./local/dynamodb-local.ts";
