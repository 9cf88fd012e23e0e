import { CoreError } from "../errors.ts";

/** A queued rollout did not come back in time (a stuck worker, a message in the DLQ). */
export class RolloutTimeoutError extends CoreError {
  constructor(jobId: string, index: number, ms: number) {
    super(
      "ROLLOUT_TIMEOUT",
      `rollout ${jobId}/${index} did not complete within ${ms} ms (is the dispatch worker running? check its DLQ)`,
    );
  }
}

/** A run was cancelled (`POST /v1/experiments/{id}/cancel`); what it finished is kept. */
export class ExperimentCancelledError extends CoreError {
  constructor(id: string) {
    super("EXPERIMENT_CANCELLED", `experiment ${id} was cancelled`);
  }
}
