export * from "./caller-rescue.ts";
export * from "./caller-endpoints.ts";
export * from "./caller-adaptive.ts";
export * from "./endpoint-kinds.ts";
