// The local stack (DynamoDB Local, fauxqs, the workers' pollers) as the CLI and the tests start it, by name.
export { startLocalStack, type LocalStack, type LocalStackOptions, type Stores } from "./stack.ts";
export { runWorkersThread } from "./workers-thread.ts";
export type { LocalWorkerOptions } from "./workers.ts";
export { startFauxqsThread } from "./fauxqs-thread.ts";
export { runWorkerProcess, type WorkerProcesses, type WorkerProcessesSpec } from "./worker-processes.ts";
