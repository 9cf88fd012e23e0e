export * from "./usage.ts";
export * from "./metering.ts";
export * from "./cost-of-goods.ts";
export * from "./quote-fit.ts";
export * from "./quote-schema.ts";
export * from "./quotes.ts";
export * from "./budgets.ts";
export * from "./usage-report.ts";
