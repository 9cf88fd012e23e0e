export * from "./profile.ts";
export * from "./reanchor.ts";
export * from "./repair.ts";
export * from "./store.ts";
export * from "./evidence.ts";
export * from "./evidence-messages.ts";
