// Entry of the thread that builds seed instances off the caller's event loop (see off-thread.ts).
// Its body runs from the CLI's build when that is as new as its sources, else from source through tsx (runBody).
import { runBody } from "../../../cli/bin/build.mjs";

await runBody("instance-worker", new URL("./instance-worker.ts", import.meta.url).href);
