import type { Direction, HarnessSpec } from "../harness/spec.ts";
import type { Rng } from "../util/rng.ts";

/** An event that accompanied H0's failures on dev tasks, with the tools of its family. */
export interface FailureSignal {
  family: string;
  event: string;
  /** The tool whose call produced this event (empty for the start of the episode). */
  producedBy: string;
  count: number;
  tools: string[];
  facts: string[];
  /** What each tool is for, from its documentation (inspect, act, navigate, verify, finalize). */
  roles: Record<string, string>;
}

/** One dev task the parent fails, as a proposer may quote it: its failure tags and what happened. */
export interface FailureEvidence {
  taskId: string;
  family: string;
  failureTags: string[];
  /** The failed rollout's turns, one line each: the call, the event, the start of what the agent was shown. */
  excerpt: string[];
}

export interface ProposalInput {
  parent: HarnessSpec;
  direction: Exclude<Direction, "base">;
  signals: FailureSignal[];
  /** The parent's failed dev tasks, with quoted trajectories (an LLM proposer cites at least two). */
  evidence?: FailureEvidence[];
  count: number;
  rng: Rng;
  round: number;
}

/** The proposer port: an LLM or the embedded mutation operator edits a harness along one direction. */
export interface Proposer {
  readonly id: string;
  propose(input: ProposalInput): Promise<HarnessSpec[]>;
  /** True once the proposer's own budget (LLM calls) is spent: evolution then stops cleanly. */
  exhausted?(): boolean;
}
