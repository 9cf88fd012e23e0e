// Entry of the SQS emulator's thread (see fauxqs-thread.ts): every queue request of the local stack's workers is answered here, not on the event loop of the process's API; its standard queues deliver as SQS fair queues do (fair-queues.ts).
// It runs the CLI's build of the body when that build is as new as its sources (packages/cli/bin/build.mjs), else
// registers the TypeScript loader and runs the body's source.
import { builtEntry } from "../../packages/cli/bin/build.mjs";

const built = builtEntry("fauxqs-thread");
if (built) await import(built);
else {
  (await import("tsx/esm/api")).register();
  await import("./fauxqs-thread-body.ts");
}
