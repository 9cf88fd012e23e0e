export * from "./memory/stores.ts";
