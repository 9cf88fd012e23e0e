import { describe, expect, it } from "vitest";
import { InvalidBallotError, VoterTimeoutError } from "@harness-s/core/voting";
import { ManualClock } from "@harness-s/core";
import { castBallot, queuedVoter, type BallotRequest, type Voter } from "@harness-s/core/voting";
import type { BallotRequestedBody } from "@harness-s/core/voting";
import { MemoryBallotStore, MemoryQueue } from "@harness-s/adapters/stores";
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
  const asked = queuedVoter(voter.id, { namespace: "exp", queue, ballots, clock, pollMs: 10, timeoutMs: 60_000 }).vote(
    request,
  );
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
    const malformed: Voter = {
      id: "garbage",
      vote: async () => Promise.reject(new InvalidBallotError("garbage", "answer is not JSON (after one retry)")),
    };
    const late: Voter = { id: "slow", vote: async () => Promise.reject(new VoterTimeoutError("slow", 8_000)) };
    // Act
    const a = await throughTheQueue(malformed);
    const b = await throughTheQueue(late);
    // Assess
    expect(a.outcome).toBe("stored");
    expect(a.error).toBeInstanceOf(InvalidBallotError);
    expect(String(a.error)).toMatch(
      /voter garbage returned an invalid ballot: answer is not JSON \(after one retry\)$/,
    );
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
    await expect(castBallot(message!.body as BallotRequestedBody, { voters: [broken], ballots })).rejects.toThrow(
      "endpoint down",
    );
    expect(await ballots.get((message!.body as BallotRequestedBody).ballotKey, "broken")).toBeUndefined();
  });
});

/**
 * A queued vote whose ballot the vote worker stores `answerAfterMs` after the request: the store reads the waiting
 * voter made, and when it had the ballot.
 */
async function waitForBallot(answerAfterMs: number) {
  const queue = new MemoryQueue();
  const store = new MemoryBallotStore();
  let reads = 0;
  const ballots = {
    put: store.put.bind(store),
    get: (key: string, voterId: string) => {
      reads++;
      return store.get(key, voterId);
    },
  };
  const clock = new ManualClock(0);
  let answeredAt: number | undefined;
  const asked = queuedVoter("llm", { namespace: "exp", queue, ballots, clock, pollMs: 10, timeoutMs: 60_000 })
    .vote(request)
    .then((b) => {
      answeredAt = clock.now();
      return b;
    });
  const flush = () => new Promise((r) => setTimeout(r, 0));
  await flush();
  const [message] = queue.take();
  const { ballotKey } = message!.body as BallotRequestedBody;
  while (answeredAt === undefined) {
    clock.advance(5);
    if (clock.now() === answerAfterMs) await store.put(ballotKey, { voterId: "llm", ranking: ["sib-a"] });
    await flush();
  }
  return { ballot: await asked, reads, answeredAt };
}

describe("a queued voter waiting for its ballot", () => {
  it("backs off from pollMs to 16 × pollMs: a ballot after 3 s costs tens of reads, and is read within one longest wait", async () => {
    // Act
    const slow = await waitForBallot(3_000);
    const fast = await waitForBallot(10);
    // Assess
    expect(slow.ballot.ranking).toEqual(["sib-a"]);
    expect(slow.reads).toBeLessThanOrEqual(25); // 10, 20, 40, 80, then every 160 ms; at a flat 10 ms it would be 300
    expect(slow.answeredAt).toBeLessThanOrEqual(3_000 + 160);
    expect(fast.reads).toBe(2); // read at once, and again after the first 10 ms
    expect(fast.answeredAt).toBe(10);
  });
});
