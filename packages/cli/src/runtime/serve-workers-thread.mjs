// Entry of `harness-s serve`'s workers' thread (see serve-workers.ts): registers the TypeScript
// loader, then runs the thread's body.
import { register } from "tsx/esm/api";

register();
await import("./serve-workers-thread.ts");
