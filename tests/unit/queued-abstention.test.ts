import { describe, expect, it } from "vitest";
import { InvalidBallotError, ManualClock, VoterTimeoutError, castBallot, queuedVoter, type BallotRequest, type BallotRequestedBody, type Voter } from "@harness-s/core";
import { MemoryBallotStore, MemoryQueue } from "@harness-s/adapters";
import { makeSpec } from "../factories.ts";

const request: BallotRequest = {
  decisionId: "d1",
  task: { id: "t1", family: "app", tags: ["app"] },
  failureTags: ["unauthorized"],
  failedEvents: [],
  candidates: [makeSpec({ id: "sib-a", provenance: { direction: "contract" } })],
  profiles: {},
  k: 1,
};

/** The queued voter asks; the vote worker (castBallot) answers with `voter`; the queued voter reads the answer. */
async function throughTheQueue(voter: Voter) {
  const queue = new MemoryQueue();
  const ballots = new MemoryBallotStore();
  const clock = new ManualClock(0);
  const asked = queuedVoter(voter.id, { namespace: "exp", queue, ballots, clock, pollMs: 10, timeoutMs: 60_000 }).vote(request);
  await new Promise((r) => setTimeout(r, 0));
  const [message] = queue.take();
  const outcome = await castBallot(message!.body as BallotRequestedBody, { voters: [voter], ballots });
  clock.advance(10);
  return {
    outcome,
    error: await asked.then(
      () => undefined,
      (err: unknown) => err,
    ),
  };
}

describe("an LLM voter's abstention through the vote queue", () => {
  it("the vote worker stores a malformed answer or a timeout as an abstention, and the waiting decision learns it at once", async () => {
    // Prepare
    const malformed: Voter = { id: "garbage", vote: async () => Promise.reject(new InvalidBallotError("garbage", "answer is not JSON (after one retry)")) };
    const late: Voter = { id: "slow", vote: async () => Promise.reject(new VoterTimeoutError("slow", 8_000)) };
    // Act
    const a = await throughTheQueue(malformed);
    const b = await throughTheQueue(late);
    // Assess
    expect(a.outcome).toBe("stored");
    expect(a.error).toBeInstanceOf(InvalidBallotError);
    expect(String(a.error)).toMatch(/voter garbage returned an invalid ballot: answer is not JSON \(after one retry\)$/);
    expect(b.error).toBeInstanceOf(VoterTimeoutError);
    expect(String(b.error)).toMatch(/within 8000 ms/);
  });

  it("any other failure is left to the queue's retries (and DLQ), not stored", async () => {
    const broken: Voter = { id: "broken", vote: async () => Promise.reject(new Error("endpoint down")) };
    const queue = new MemoryQueue();
    const ballots = new MemoryBallotStore();
    void queuedVoter("broken", { namespace: "exp", queue, ballots, clock: new ManualClock(0) })
      .vote(request)
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 0));
    const [message] = queue.take();
    await expect(castBallot(message!.body as BallotRequestedBody, { voters: [broken], ballots })).rejects.toThrow("endpoint down");
    expect(await ballots.get((message!.body as BallotRequestedBody).ballotKey, "broken")).toBeUndefined();
  });
});
