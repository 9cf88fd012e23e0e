import { runExperimentJob, type CoordinatorDeps } from "@harness-s/core/experiment";
import { createSqsWorker } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";

/**
 * The `coordinator` worker: runs one experiment (claimed with a lease, so a redelivery while it
 * runs is a no-op), saving progress, partial results and usage as it goes.
 *
 * @example
 * const handler = createCoordinatorHandler({ experiments, clock: systemClock, prepare });
 */
export function createCoordinatorHandler(deps: CoordinatorDeps & { log?: (line: string) => void; metering?: WorkerMetering }) {
  const unbilled = () => deps.metering?.consumption.current() ?? {};
  return createSqsWorker("coordinator", "experiment.requested", (body) => runExperimentJob(body.experimentId, { unbilled, ...deps }), {
    log: deps.log,
    metering: deps.metering,
  });
}
