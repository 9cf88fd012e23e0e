export * from "./advantage.ts";
export * from "./objective.ts";
