/* Invariants: see ./README.md. */
import { z } from "zod";
import type { Ballot } from "./ballot.ts";

/**
 * Vote aggregators by name: the points a candidate gets from one ballot, given the number of
 * candidates and its (tie-shared, 1-based) rank. Config enums are derived from these keys.
 */
export const AGGREGATORS = {
  borda: (n: number, rank: number) => n - rank,
  rrf: (_n: number, rank: number) => 1 / (60 + rank),
} satisfies Record<string, (n: number, rank: number) => number>;
export type Aggregator = keyof typeof AGGREGATORS;
export const AggregatorName = z.enum(Object.keys(AGGREGATORS) as [Aggregator, ...Aggregator[]]);

/** Per-candidate points from one ballot: Borda points or RRF contributions, ties shared. */
function ballotRanks(ballot: Ballot, candidates: readonly string[]): Map<string, number> {
  const ranks = new Map<string, number>();
  const listed = ballot.ranking.filter((id) => candidates.includes(id));
  let pos = 0;
  while (pos < listed.length) {
    let end = pos;
    const score = ballot.scores?.[listed[pos]!];
    while (end + 1 < listed.length && score !== undefined && ballot.scores?.[listed[end + 1]!] === score) end++;
    for (let i = pos; i <= end; i++) ranks.set(listed[i]!, (pos + end) / 2 + 1);
    pos = end + 1;
  }
  const missing = candidates.filter((id) => !ranks.has(id));
  const shared = listed.length + (missing.length + 1) / 2;
  for (const id of missing) ranks.set(id, shared);
  return ranks;
}

export interface Tally {
  harnessId: string;
  score: number;
  firstPlaces: number;
}

/**
 * Combines ballots into one ordering; a ballot's points are multiplied by its voter's weight
 * (default 1).
 *
 * @example
 * aggregate([{ voterId: "a", ranking: ["x", "y"] }], ["x", "y"], "borda")[0].harnessId; // "x"
 */
export function aggregate(
  ballots: readonly Ballot[],
  candidates: readonly string[],
  method: Aggregator,
  weights: Readonly<Record<string, number>> = {},
): Tally[] {
  const n = candidates.length;
  const points = AGGREGATORS[method];
  const tally = new Map<string, Tally>(candidates.map((id) => [id, { harnessId: id, score: 0, firstPlaces: 0 }]));
  for (const ballot of ballots) {
    const weight = weights[ballot.voterId] ?? 1;
    for (const [id, rank] of ballotRanks(ballot, candidates)) {
      const t = tally.get(id)!;
      t.score += weight === 1 ? points(n, rank) : weight * points(n, rank);
      if (rank === 1) t.firstPlaces++;
    }
  }
  return [...tally.values()].sort(
    (a, b) =>
      b.score - a.score ||
      b.firstPlaces - a.firstPlaces ||
      (a.harnessId < b.harnessId ? -1 : a.harnessId > b.harnessId ? 1 : 0),
  );
}
