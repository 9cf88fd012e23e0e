// The embedded policy's endpoint (`harness-s policy-serve`), by name.
export { createPolicyServer } from "./server.ts";
