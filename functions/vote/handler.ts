import { castBallot, type BallotStore, type Voter } from "@harness-s/core/voting";
import { spendUsage } from "@harness-s/core/billing";
import type { VoterSpend } from "@harness-s/core/billing";
import { createSqsWorker } from "../sqs-worker.ts";
import type { WorkerMetering } from "../worker-metering.ts";

/**
 * The `vote` worker: one voter (statistical or LLM) casts its ballot for one routing decision;
 * the ballot is stored once per (decision, voter), so redeliveries change nothing.
 *
 * @example
 * const handler = createVoteHandler({ voters: [...statisticalVoters, llmVoter], ballots });
 */
export function createVoteHandler(deps: {
  voters: readonly Voter[];
  ballots: BallotStore;
  log?: (line: string) => void;
  metering?: WorkerMetering;
}) {
  // A voter's tokens are metered in the record's scope, so they land on its payer with the rest.
  const onSpend = (s: VoterSpend) => deps.metering?.consumption.record(spendUsage(s));
  return createSqsWorker("vote", "ballot.requested", (body) => castBallot(body, { ...deps, onSpend }), {
    log: deps.log,
    metering: deps.metering,
  });
}
