export * from "./loglinear-policy.ts";
export * from "./adam.ts";
