// The seed-list syntax is core's, shared with the web console's experiment form (one parser for both).
export { parseSeedList } from "@harness-s/core/seeds";
