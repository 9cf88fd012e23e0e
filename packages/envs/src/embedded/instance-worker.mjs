// Entry of the thread that builds seed instances off the caller's event loop (see off-thread.ts).
// It runs the CLI's build of the body when that build is as new as its sources (packages/cli/bin/build.mjs), else
// registers the TypeScript loader and runs the body's source.
import { builtEntry } from "../../../cli/bin/build.mjs";

const built = builtEntry("instance-worker");
if (built) await import(built);
else {
  (await import("tsx/esm/api")).register();
  await import("./instance-worker.ts");
}
