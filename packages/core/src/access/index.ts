export * from "./keys.ts";
export * from "./auth.ts";
export * from "./events.ts";
export * from "./rate.ts";
export * from "./lifecycle.ts";
export * from "./errors.ts";
