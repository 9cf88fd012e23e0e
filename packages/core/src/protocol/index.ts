export * from "./v1.ts";
export * from "./v2.ts";
export * from "./served.ts";
export * from "./segments.ts";
