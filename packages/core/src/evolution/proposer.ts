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

export interface ProposalInput {
  parent: HarnessSpec;
  direction: Exclude<Direction, "base">;
  signals: FailureSignal[];
  count: number;
  rng: Rng;
  round: number;
}

/** The proposer port: an LLM or the embedded mutation operator edits a harness along one direction. */
export interface Proposer {
  readonly id: string;
  propose(input: ProposalInput): Promise<HarnessSpec[]>;
}
