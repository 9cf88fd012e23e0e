// The experiment report and its plots, shared by the CLI and the coordinator (`@harness-s/adapters/report`;
// not in the package's root export: it loads vega and resvg).
export * from "./stats.ts";
export * from "./families.ts";
export * from "./harm.ts";
export * from "./plots.ts";
export * from "./markdown.ts";
export * from "./summary-plots.ts";
export * from "./experiment-report.ts";
