// SQS: the Lambda event's shape and the local poller.
export { SqsRecord, SqsEvent, type SqsBatchResponse } from "./event.ts";
export { pollOnce, pollElastic, type PollOptions } from "./poller.ts";
