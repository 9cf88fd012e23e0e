import {
  publishExperimentReport,
  runExperimentJob,
  type CoordinatorDeps,
  type ExperimentArtifacts,
  type ExperimentDeps,
  type ExperimentReportRenderer,
} from "@harness-s/core/experiment";
import { NotConfiguredError } from "@harness-s/core";
import { runPoolEvolution, type PoolEvolutionWorkerDeps } from "@harness-s/core/pools";
import { createSqsWorker } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";

/**
 * The `coordinator` worker: runs one experiment (claimed with a lease, so a redelivery while it
 * runs is a no-op), saving progress, partial results and usage as it goes; and one pool evolution
 * for a caller's environment (`pool.evolve.requested`, claimed the same way) where `poolEvolution`
 * is wired, else it fails its message with NOT_CONFIGURED (to its DLQ, nothing lost). With
 * `reports`, a run that ends done (or stopped with finished units) gets its report and plots
 * stored beside it (a failure there is logged; the run stays as it ended).
 *
 * @example
 * const handler = createCoordinatorHandler({ experiments, clock: systemClock, prepare });
 */
export function createCoordinatorHandler(
  deps: CoordinatorDeps & {
    poolEvolution?: Omit<PoolEvolutionWorkerDeps, "clock" | "meter">;
    reports?: CoordinatorReports;
    log?: (line: string) => void;
    metering?: WorkerMetering;
  },
) {
  const unbilled = () => deps.metering?.consumption.current() ?? {};
  return createSqsWorker(
    "coordinator",
    ["experiment.requested", "pool.evolve.requested"],
    (_body, _id, envelope) => {
      if (envelope.type === "experiment.requested") return runAndReport(envelope.body.experimentId, { unbilled, ...deps });
      if (!deps.poolEvolution) throw new NotConfiguredError("this coordinator evolves no pools (no caller policies wired)");
      return runPoolEvolution(envelope.body.evolutionId, { ...deps.poolEvolution, clock: deps.clock, ...(deps.meter ? { meter: deps.meter } : {}) });
    },
    { log: deps.log, metering: deps.metering },
  );
}

/** Where a finished run's report and plots go, and what renders them (`@harness-s/adapters/report`). */
export interface CoordinatorReports {
  artifacts: ExperimentArtifacts;
  render: ExperimentReportRenderer;
}

/** One attempt at a run; if it ended with something to report, its report stored from the seeds' instances it ran on. */
async function runAndReport(id: string, deps: CoordinatorDeps & { reports?: CoordinatorReports; log?: (line: string) => void }) {
  let prepared: ExperimentDeps | undefined;
  const ended = await runExperimentJob(id, { ...deps, prepare: async (record) => (prepared = await deps.prepare(record)) });
  if (deps.reports && ended !== "duplicate" && prepared) {
    const logger = deps.logger ?? (deps.log ? { warn: deps.log } : undefined);
    await publishExperimentReport(ended, prepared.instance, { ...deps.reports, ...(logger ? { logger } : {}) });
  }
  return ended;
}
