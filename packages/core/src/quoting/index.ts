export * from "./quote-fit.ts";
export * from "./quote-config.ts";
export * from "./quotes.ts";
export * from "./budgets.ts";
export * from "./admitted-quote.ts";
export * from "./basis.ts";
