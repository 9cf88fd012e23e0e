import { describe, expect, it } from "vitest";
import { ManualClock, queuedVoter, type BallotRequest, type BallotRequestedBody } from "@harness-s/core";
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

/** A queued vote whose ballot the vote worker stores `answerAfterMs` after the request: the store reads the waiting voter made, and when it had the ballot. */
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
