export * from "./errors.ts";
export * from "./memory/stores.ts";
export * from "./dynamo/tables.ts";
export * from "./dynamo/stores.ts";
export * from "./local/dynamodb-local.ts";
export * from "./sqs/event.ts";
export * from "./sqs/queue.ts";
export * from "./sqs/poller.ts";
