import { CoreError } from "../errors.ts";
import type { VoterSpend } from "../billing/metering.ts";

/** Too few voters answered for a routing decision to count. */
export class QuorumError extends CoreError {
  constructor(
    readonly answered: number,
    readonly required: number,
    readonly failures: { voterId: string; reason: string }[],
  ) {
    super(
      "QUORUM_NOT_MET",
      `only ${answered} of the required ${required} voters answered (${failures.map((f) => `${f.voterId}: ${f.reason}`).join("; ")})`,
    );
  }
}

/** A voter did not answer in time. */
export class VoterTimeoutError extends CoreError {
  constructor(
    voterId: string,
    readonly ms: number,
  ) {
    super("VOTER_TIMEOUT", `voter ${voterId} did not answer within ${ms} ms`);
  }
}

/** A ballot referred to harnesses that were not candidates, or was otherwise malformed. */
export class InvalidBallotError extends CoreError {
  constructor(
    voterId: string,
    readonly detail: string,
    options?: { cause?: unknown; spent?: VoterSpend },
  ) {
    super("INVALID_BALLOT", `voter ${voterId} returned an invalid ballot: ${detail}`, options);
    this.spent = options?.spent;
  }

  /** What the voter's unusable answers cost (metered like a ballot's). */
  readonly spent: VoterSpend | undefined;
}
