export * from "./usage.ts";
export * from "./metering.ts";
export * from "./cost-of-goods.ts";
export * from "./quote-schema.ts";
export * from "./usage-report.ts";
export * from "./spend-events.ts";
