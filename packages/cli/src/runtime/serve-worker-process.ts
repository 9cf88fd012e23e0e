import { runWorkerProcess } from "@harness-s/functions/local";
import { buildServeWorkers } from "./serve-workers.ts";

// The body of one of serve's worker processes: one worker's pollers (dispatch, as a Lambda invocation runs it), built
// from the same data as the workers' thread.
runWorkerProcess(buildServeWorkers);
