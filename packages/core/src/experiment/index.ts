export * from "./summary.ts";
export * from "./run-experiment.ts";
export * from "./unit-policies.ts";
export * from "./merge.ts";
export * from "./records.ts";
export * from "./start.ts";
export * from "./run.ts";
export * from "./queued-runner.ts";
export { evalSet } from "./unit.ts";
