export * from "./keys.ts";
export * from "./auth.ts";
