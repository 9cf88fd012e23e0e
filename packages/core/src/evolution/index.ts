export * from "./proposer.ts";
export * from "./mutation-proposer.ts";
export * from "./evolve.ts";
export * from "./pool-selection.ts";
export * from "./proposal.ts";
