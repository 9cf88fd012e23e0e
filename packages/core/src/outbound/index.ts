export * from "./caller-url.ts";
export * from "./ip.ts";
export * from "./cidr.ts";
