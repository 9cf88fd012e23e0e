import { runWorkersThread } from "@harness-s/functions/local";
import { buildServeWorkers } from "./serve-workers.ts";

// The body of serve's workers' thread: its workers wired as in process, but off the API's event loop.
await runWorkersThread(buildServeWorkers);
