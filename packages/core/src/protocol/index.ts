export * from "./v1.ts";
export * from "./v2.ts";
