// Entry of the thread that builds seed instances off the caller's event loop
// (see off-thread.ts): registers the TypeScript loader, then runs the worker's body.
import { register } from "tsx/esm/api";

register();
await import("./instance-worker.ts");
