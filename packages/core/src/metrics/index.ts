export * from "./pass-at-k.ts";
export * from "./stats.ts";
