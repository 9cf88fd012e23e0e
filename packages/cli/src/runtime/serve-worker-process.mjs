// Entry of each of `harness-s serve`'s worker processes (`--dispatch-processes`; see serve-workers.ts): registers the
// TypeScript loader, then runs the process's body.
import { register } from "tsx/esm/api";

register();
await import("./serve-worker-process.ts");
