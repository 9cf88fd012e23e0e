import type { Ballot } from "./ballot.ts";

/** Ballots cast by the vote worker, keyed by (ballot key, voter); the first write wins. */
export interface BallotStore {
  put(ballotKey: string, ballot: Ballot): Promise<"stored" | "duplicate">;
  get(ballotKey: string, voterId: string): Promise<Ballot | undefined>;
}
