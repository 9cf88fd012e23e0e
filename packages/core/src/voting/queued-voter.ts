import { NotFoundError } from "../errors.ts";
import { InvalidBallotError, VoterTimeoutError } from "./errors.ts";
import type { VoterSpend } from "../billing/metering.ts";
import { contentVersion } from "../harness/pool.ts";
import { profileOf } from "../profile/profile.ts";
import type { Clock } from "../util/clock.ts";
import type { Ballot, BallotRequest, VoteContext, Voter } from "./ballot.ts";
import { envelope, type Payer } from "../messaging/envelope.ts";
import type { BallotRequestedBody } from "./ballot-request.ts";
import "./ballot-request.ts"; // registers ballot.requested
import type { BallotStore } from "./store.ts";
import type { MessageQueue } from "../messaging/queue.ts";

/**
 * A {@link Voter} whose ballot is cast by the `vote` worker: the request goes out as a
 * `ballot.requested` message and the ballot is read back from the store. Requests are keyed by
 * their content (under `namespace`), so a retried or repeated request reuses the ballot. The
 * router's own timeout and quorum rule apply to it as to any voter. The store is read after
 * `pollMs`, then at twice the last wait up to 16 × `pollMs` (as the rollout runner does): an LLM
 * voter's seconds cost tens of reads, not hundreds.
 *
 * @example
 * const voters = statisticalVoters.map((v) => queuedVoter(v.id, { namespace: "exp1", queue, ballots, clock }));
 */
export function queuedVoter(
  voterId: string,
  opts: {
    namespace: string;
    queue: MessageQueue;
    ballots: BallotStore;
    clock: Clock;
    pollMs?: number;
    timeoutMs?: number;
    payer?: Payer;
  },
): Voter {
  const pollMs = opts.pollMs ?? 10;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return {
    id: voterId,
    async vote(req: BallotRequest, ctx?: VoteContext): Promise<Ballot> {
      const content = {
        decisionId: req.decisionId,
        voterId,
        task: req.task,
        failureTags: req.failureTags,
        failedEvents: req.failedEvents,
        candidates: req.candidates,
        profiles: Object.fromEntries(
          req.candidates.flatMap((c) =>
            profileOf(req.profiles, c.id) ? [[c.id, profileOf(req.profiles, c.id)!]] : [],
          ),
        ),
        k: req.k,
      };
      const body: BallotRequestedBody = { ...content, ballotKey: `${opts.namespace}:${contentVersion(content)}` };
      await opts.queue.send([envelope("ballot.requested", `${body.ballotKey}:${voterId}`, body, opts.payer)]);
      const deadline = opts.clock.now() + timeoutMs;
      for (let wait = pollMs; ; wait = Math.min(wait * 2, pollMs * 16)) {
        if (ctx?.signal?.aborted) throw ctx.signal.reason ?? new VoterTimeoutError(voterId, timeoutMs);
        const ballot = await opts.ballots.get(body.ballotKey, voterId);
        if (ballot?.usage)
          ctx?.onSpend?.({ usage: ballot.usage, ...(ballot.costUsd !== undefined ? { costUsd: ballot.costUsd } : {}) });
        if (ballot?.abstained?.kind === "timeout") throw new VoterTimeoutError(voterId, ballot.abstained.ms ?? 0);
        if (ballot?.abstained)
          throw new InvalidBallotError(
            voterId,
            ballot.abstained.reason,
            ballot.usage
              ? { spent: { usage: ballot.usage, ...(ballot.costUsd !== undefined ? { costUsd: ballot.costUsd } : {}) } }
              : {},
          );
        if (ballot) return ballot;
        if (opts.clock.now() > deadline)
          throw new Error(`no ballot from ${voterId} for ${req.decisionId} within ${timeoutMs} ms`);
        await opts.clock.sleep(wait);
      }
    },
  };
}

/**
 * The `vote` use-case: one voter's ballot for one request, cast once; a redelivered request
 * finds the stored ballot and changes nothing.
 */
export async function castBallot(
  body: BallotRequestedBody,
  deps: {
    voters: readonly Voter[];
    ballots: BallotStore /** Hears of every spend as it happens (the worker's cost of goods). */;
    onSpend?: (s: VoterSpend) => void;
  },
): Promise<"stored" | "duplicate"> {
  if (await deps.ballots.get(body.ballotKey, body.voterId)) return "duplicate";
  const voter = deps.voters.find((v) => v.id === body.voterId);
  if (!voter) throw new NotFoundError("voter", body.voterId);
  let ballot: Ballot;
  // What the voter spent, kept with a timed-out abstention too (its first answer may have cost tokens).
  const spent = { promptTokens: 0, completionTokens: 0, costUsd: 0 };
  const onSpend = (s: VoterSpend) => {
    spent.promptTokens += s.usage.promptTokens;
    spent.completionTokens += s.usage.completionTokens;
    spent.costUsd += s.costUsd ?? 0;
    deps.onSpend?.(s);
  };
  try {
    ballot = await voter.vote(
      {
        decisionId: body.decisionId,
        task: body.task,
        failureTags: body.failureTags,
        failedEvents: body.failedEvents,
        candidates: body.candidates,
        profiles: body.profiles,
        k: body.k,
      },
      { onSpend },
    );
  } catch (err) {
    // An abstention is an answer: stored, so the decision waiting on it goes on at once. Any other
    // failure is retried by the queue (and ends in its DLQ).
    if (err instanceof InvalidBallotError)
      ballot = {
        voterId: body.voterId,
        ranking: [],
        abstained: { kind: "malformed", reason: err.detail },
        ...err.spent,
      };
    else if (err instanceof VoterTimeoutError) {
      const usage =
        spent.promptTokens + spent.completionTokens > 0
          ? {
              usage: { promptTokens: spent.promptTokens, completionTokens: spent.completionTokens },
              costUsd: spent.costUsd,
            }
          : {};
      ballot = {
        voterId: body.voterId,
        ranking: [],
        abstained: { kind: "timeout", reason: err.message, ms: err.ms },
        ...usage,
      };
    } else throw err;
  }
  return deps.ballots.put(body.ballotKey, { ...ballot, voterId: body.voterId });
}
