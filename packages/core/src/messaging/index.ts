export * from "./envelope.ts";
export * from "./queue.ts";
