export * from "./job-record.ts";
export * from "./rescue-request.ts";
export * from "./trajectories.ts";
export * from "./jobs.ts";
export * from "./status.ts";
export * from "./list.ts";
export * from "./progress.ts";
export * from "./errors.ts";
