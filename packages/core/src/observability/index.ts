export * from "./correlation.ts";
export * from "./events.ts";
export * from "./prometheus.ts";
