export * from "./caller-url.ts";
