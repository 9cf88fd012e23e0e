export * from "./ballot.ts";
export * from "./aggregate.ts";
export * from "./statistical-voters.ts";
export * from "./router.ts";
export * from "./top-k.ts";
export * from "./panel.ts";
export * from "./store.ts";
export * from "./queued-voter.ts";
