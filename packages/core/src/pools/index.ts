export * from "./evolve-request.ts";
export * from "./evolution-record.ts";
export * from "./start-evolution.ts";
export * from "./run-evolution.ts";
export * from "./visibility.ts";
export * from "./messages.ts";
export * from "./errors.ts";
