import { runExperimentJob, type CoordinatorDeps } from "@harness-s/core/experiment";
import { NotConfiguredError } from "@harness-s/core";
import { runPoolEvolution, type PoolEvolutionWorkerDeps } from "@harness-s/core/pools";
import { createSqsWorker } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";

/**
 * The `coordinator` worker: runs one experiment (claimed with a lease, so a redelivery while it
 * runs is a no-op), saving progress, partial results and usage as it goes; and one pool evolution
 * for a caller's environment (`pool.evolve.requested`, claimed the same way) where `poolEvolution`
 * is wired, else it fails its message with NOT_CONFIGURED (to its DLQ, nothing lost).
 *
 * @example
 * const handler = createCoordinatorHandler({ experiments, clock: systemClock, prepare });
 */
export function createCoordinatorHandler(
  deps: CoordinatorDeps & { poolEvolution?: Omit<PoolEvolutionWorkerDeps, "clock" | "meter">; log?: (line: string) => void; metering?: WorkerMetering },
) {
  const unbilled = () => deps.metering?.consumption.current() ?? {};
  return createSqsWorker(
    "coordinator",
    ["experiment.requested", "pool.evolve.requested"],
    (_body, _id, envelope) => {
      if (envelope.type === "experiment.requested") return runExperimentJob(envelope.body.experimentId, { unbilled, ...deps });
      if (!deps.poolEvolution) throw new NotConfiguredError("this coordinator evolves no pools (no caller policies wired)");
      return runPoolEvolution(envelope.body.evolutionId, { ...deps.poolEvolution, clock: deps.clock, ...(deps.meter ? { meter: deps.meter } : {}) });
    },
    { log: deps.log, metering: deps.metering },
  );
}
