export * from "./route-task.ts";
export * from "./decision-cache.ts";
export * from "./decision-store.ts";
export * from "./rank1.ts";
