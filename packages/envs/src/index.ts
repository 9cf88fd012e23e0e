export * from "./embedded/family.ts";
export * from "./embedded/suite.ts";
export * from "./embedded/environment.ts";
export * from "./embedded/h0.ts";
export { appFamily } from "./embedded/app.ts";
export { repairFamily } from "./embedded/repair.ts";
export { dbFamily } from "./embedded/db.ts";
export * from "./embedded/prior.ts";
export * from "./embedded/text.ts";
