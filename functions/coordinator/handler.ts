import {
  publishExperimentReport,
  runExperimentJob,
  type CoordinatorDeps,
  type ExperimentArtifacts,
  type ExperimentDeps,
  type ExperimentRecord,
  type ExperimentReportRenderer,
  type ExperimentStore,
} from "@harness-s/core/experiment";
import { NotConfiguredError } from "@harness-s/core";
import { runPoolEvolution, type PoolEvolutionWorkerDeps } from "@harness-s/core/pools";
import { quoteBasisOn } from "@harness-s/core/quoting";
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
  // A run that ends done joins the meter's measured basis for quotes (quoting is above experiments: handed in here).
  const quoteBasis = deps.quoteBasis ?? (deps.meter ? quoteBasisOn(deps.meter) : undefined);
  return createSqsWorker(
    "coordinator",
    ["experiment.requested", "pool.evolve.requested"],
    (_body, _id, envelope) => {
      if (envelope.type === "experiment.requested")
        return runAndReport(envelope.body.experimentId, { unbilled, ...deps, ...(quoteBasis ? { quoteBasis } : {}) });
      if (!deps.poolEvolution)
        throw new NotConfiguredError("this coordinator evolves no pools (no caller policies wired)");
      return runPoolEvolution(envelope.body.evolutionId, {
        ...deps.poolEvolution,
        clock: deps.clock,
        ...(deps.meter ? { meter: deps.meter } : {}),
        // A delivery under a dead attempt's lease is sent again for when it lapses, on the coordinator's own queue.
        ...(deps.continueOn ? { lookAgainOn: deps.continueOn } : {}),
      });
    },
    { log: deps.log, metering: deps.metering },
  );
}

/** Where a finished run's report and plots go, and what renders them (`@harness-s/adapters/report`). */
export interface CoordinatorReports {
  artifacts: ExperimentArtifacts;
  render: ExperimentReportRenderer;
}

/**
 * One attempt at a run. With `reports`, the run's last save as done or stopped is preceded by
 * storing its report from the seeds' instances it ran on: a run reads as ended only once its
 * report is there (or making it failed, and was logged).
 */
async function runAndReport(
  id: string,
  deps: CoordinatorDeps & { reports?: CoordinatorReports; log?: (line: string) => void },
) {
  const reports = deps.reports;
  if (!reports) return runExperimentJob(id, deps);
  let prepared: ExperimentDeps | undefined;
  const logger = deps.logger ?? (deps.log ? { warn: deps.log } : undefined);
  const publish = (record: ExperimentRecord) =>
    prepared
      ? publishExperimentReport(
          record,
          prepared.instance,
          { ...reports, ...(logger ? { logger } : {}) },
          prepared.reportSection,
        )
      : Promise.resolve();
  return runExperimentJob(id, {
    ...deps,
    experiments: reportFirst(deps.experiments, publish),
    prepare: async (record) => (prepared = await deps.prepare(record)),
  });
}

/** `store` whose save of a run as done or stopped runs `publish` first. */
function reportFirst(store: ExperimentStore, publish: (record: ExperimentRecord) => Promise<unknown>): ExperimentStore {
  return {
    create: (record) => store.create(record),
    get: (id) => store.get(id),
    claim: (id, now, leaseUntil) => store.claim(id, now, leaseUntil),
    save: async (record) => {
      if (record.status === "done" || record.status === "stopped") await publish(record);
      return store.save(record);
    },
    requestCancel: (id, now) => store.requestCancel(id, now),
    cancelRequested: (id) => store.cancelRequested(id),
    listByKey: (keyId, page) => store.listByKey(keyId, page),
  };
}
