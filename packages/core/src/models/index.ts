export * from "./served-model.ts";
