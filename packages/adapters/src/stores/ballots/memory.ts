import type { Ballot, BallotStore } from "@harness-s/core/voting";
import { frozenCopy } from "../frozen-copy.ts";

export class MemoryBallotStore implements BallotStore {
  private readonly ballots = new Map<string, Ballot>();

  async put(ballotKey: string, ballot: Ballot): Promise<"stored" | "duplicate"> {
    const key = `${ballotKey}\u0000${ballot.voterId}`;
    if (this.ballots.has(key)) return "duplicate";
    this.ballots.set(key, frozenCopy(ballot));
    return "stored";
  }

  async get(ballotKey: string, voterId: string): Promise<Ballot | undefined> {
    return this.ballots.get(`${ballotKey}\u0000${voterId}`);
  }
}
