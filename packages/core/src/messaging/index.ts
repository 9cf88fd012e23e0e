export * from "./envelope.ts";
export * from "./queue.ts";
export * from "./errors.ts";
export * from "./resend.ts";
