// Entry of the SQS emulator's thread (see fauxqs-thread.ts): every queue request of the local stack's workers is
// answered here, not on the event loop of the process's API; its standard queues deliver as SQS fair queues do
// (fair-queues.ts).
// Its body runs from the CLI's build when that is as new as its sources, else from source through tsx (runBody).
import { runBody } from "../../packages/cli/bin/build.mjs";

await runBody("fauxqs-thread", new URL("./fauxqs-thread-body.ts", import.meta.url).href);
