// Entry of `harness-s serve`'s workers' thread (see serve-workers.ts).
// It runs the CLI's build of the body when that build is as new as its sources (packages/cli/bin/build.mjs), else
// registers the TypeScript loader and runs the body's source.
import { builtEntry } from "../../bin/build.mjs";

const built = builtEntry("serve-workers-thread");
if (built) await import(built);
else {
  (await import("tsx/esm/api")).register();
  await import("./serve-workers-thread.ts");
}
