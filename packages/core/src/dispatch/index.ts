export * from "./rollout-source.ts";
export * from "./rollout-request.ts";
export * from "./slots.ts";
export * from "./spend.ts";
export * from "./policy-endpoints.ts";
export * from "./dispatch.ts";
export * from "./errors.ts";
