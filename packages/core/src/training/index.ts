export * from "./config.ts";
export * from "./evaluate.ts";
export * from "./audit.ts";
export * from "./trainer.ts";
export * from "./speculation.ts";
export * from "./arm-config.ts";
export * from "./samples.ts";
export * from "./train-state.ts";
