import { castBallot, type BallotStore, type Voter } from "@harness-s/core";
import { createSqsWorker } from "../sqs-worker.ts";

/**
 * The `vote` worker: one voter (statistical or LLM) casts its ballot for one routing decision;
 * the ballot is stored once per (decision, voter), so redeliveries change nothing.
 *
 * @example
 * const handler = createVoteHandler({ voters: [...statisticalVoters, llmVoter], ballots });
 */
export function createVoteHandler(deps: { voters: readonly Voter[]; ballots: BallotStore; log?: (line: string) => void }) {
  return createSqsWorker("vote", "ballot.requested", (body) => castBallot(body, deps), deps.log);
}
