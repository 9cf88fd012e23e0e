import { applyEvidence, type ProfileLedger } from "@harness-s/core/profile";
import { createSqsWorker } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";

/**
 * The `profile` worker: applies reported outcomes to behaviour profiles, idempotently per
 * envelope id, so redeliveries change nothing.
 *
 * @example
 * export const handler = createProfileHandler({ ledger: new DynamoProfileStore(doc, tables) });
 */
export function createProfileHandler(deps: {
  ledger: ProfileLedger;
  log?: (line: string) => void;
  metering?: WorkerMetering;
}) {
  return createSqsWorker("profile", "profile.evidence", (body, id) => applyEvidence(id, body, deps.ledger), {
    log: deps.log,
    metering: deps.metering,
  });
}
