/* Invariants: see ./README.md. */
import { z } from "zod";
import type { VoterSpend } from "../billing/metering.ts";
import type { HarnessSpec } from "../harness/spec.ts";
import type { ProfileSet } from "../profile/profile.ts";
import type { TaskView } from "../task.ts";

export const Ballot = z
  .object({
    voterId: z.string().min(1),
    ranking: z.array(z.string().min(1)),
    scores: z.record(z.string(), z.number()).optional(),
    rationale: z.string().max(2000).optional(),
    /** Tokens an LLM voter spent, for pay-per-use metering. */
    usage: z.object({ promptTokens: z.number().int().min(0), completionTokens: z.number().int().min(0) }).optional(),
    /** What the ballot cost in USD (an LLM voter's tokens at its configured price). */
    costUsd: z.number().min(0).optional(),
    /** Answers the voter gave before this one that could not be read (an LLM voter retries once). */
    retries: z.number().int().min(0).optional(),
    /**
     * Set on a stored record when the voter abstained (the `vote` worker keeps it so a queued
     * decision learns at once that this voter will not answer); such a record ranks nothing.
     */
    abstained: z
      .object({
        kind: z.enum(["timeout", "malformed"]),
        reason: z.string().max(4000),
        ms: z.number().int().min(0).optional(),
      })
      .optional(),
  })
  .refine((b) => b.abstained !== undefined || b.ranking.length > 0, {
    path: ["ranking"],
    message: "Too small: expected array to have >=1 items",
  });
export type Ballot = z.infer<typeof Ballot>;

/** Everything a voter may look at for one routing decision. */
export interface BallotRequest {
  decisionId: string;
  task: TaskView;
  /** Failure tags of the failed H0 group (empty for Rank-1 inference). */
  failureTags: string[];
  /** Events seen in the failed group's rollouts, most frequent first. */
  failedEvents: string[];
  candidates: HarnessSpec[];
  profiles: ProfileSet;
  k: number;
}

/**
 * How one vote is run: `signal` aborts it (the router's deadline: an LLM voter stops its request,
 * download included), and a voter that spends tokens reports each call's spend to `onSpend` as it
 * happens, whatever becomes of the ballot (malformed, late, or a decision that misses its quorum).
 */
export interface VoteContext {
  signal?: AbortSignal;
  onSpend?: (spent: VoterSpend) => void;
}

/** The voter port: an LLM voter or a statistical scorer. */
export interface Voter {
  readonly id: string;
  vote(request: BallotRequest, context?: VoteContext): Promise<Ballot>;
}

/** Ranks ids by score, best first, ties broken by id so ballots are deterministic. */
export function rankByScore(voterId: string, scores: Record<string, number>): Ballot {
  const ranking = Object.keys(scores).sort((a, b) => scores[b]! - scores[a]! || (a < b ? -1 : a > b ? 1 : 0));
  return { voterId, ranking, scores };
}
