import { describe, expect, it } from "vitest";
import { ManualClock, createPool } from "@harness-s/core";
import { zeroUsage } from "@harness-s/core/billing";
import type { Ballot, BallotRequest, Voter, VoteContext } from "@harness-s/core/voting";
import type { Envelope } from "@harness-s/core/messaging";
import { ConsumptionMeter } from "@harness-s/adapters/metering";
import { MemoryBallotStore, MemoryUsageMeter } from "@harness-s/adapters/stores";
import { createVoteHandler } from "../../functions/vote/handler.ts";
import { OVERHEAD_KEY } from "../../functions/worker-metering.ts";
import { ballotEnvelope, makeSpec, makeSqsEvent } from "../factories.ts";

const pool = createPool("p", makeSpec(), [
  makeSpec({ id: "sib-a", provenance: { direction: "recovery" } }),
  makeSpec({ id: "sib-b", provenance: { direction: "recon" } }),
]);
const ballot = (key: string, voterId: string, payer?: Envelope["payer"]) => ballotEnvelope(pool, key, voterId, payer);
/** A voter that spends 100 tokens (0.01 USD) per ballot, and whose store call consumes one write unit. */
const spendingVoter = (consumption: ConsumptionMeter): Voter => ({
  id: "llm",
  vote: async (req: BallotRequest, ctx?: VoteContext): Promise<Ballot> => {
    await new Promise((r) => setTimeout(r, 2));
    consumption.record({ dynamoWriteUnits: 1 });
    ctx?.onSpend?.({ usage: { promptTokens: 80, completionTokens: 20 }, costUsd: 0.01 });
    return { voterId: "llm", ranking: req.candidates.map((c) => c.id) };
  },
});

describe("a worker meters each message to its payer", () => {
  it("bills each record's consumption and voter spend to its key and job, one write per payer, the rest to the deployment", async () => {
    // Prepare
    const consumption = new ConsumptionMeter();
    const meter = new MemoryUsageMeter(new ManualClock(Date.parse("2026-12-03T10:00:00Z")));
    const handler = createVoteHandler({
      voters: [spendingVoter(consumption)],
      ballots: new MemoryBallotStore(),
      metering: { consumption, meter, memoryGb: 2 },
    });
    consumption.record({ sqsRequests: 3 }); // a poller's receives: no message's
    // Act
    await handler(
      makeSqsEvent([
        ballot("b1", "llm", { keyId: "k1", jobId: "exp_1" }),
        ballot("b2", "llm", { keyId: "k1", jobId: "exp_1" }),
        ballot("b3", "llm"),
      ]),
    );
    // Assess
    const k1 = await meter.get("k1");
    expect(k1).toMatchObject({ llmTokens: 200, llmCostUsd: 0.02, dynamoWriteUnits: 2 });
    expect(await meter.job("exp_1")).toEqual(k1);
    expect(k1.lambdaGbSeconds).toBeGreaterThan(0);
    const overhead = await meter.get(OVERHEAD_KEY);
    expect(overhead).toMatchObject({ llmTokens: 100, dynamoWriteUnits: 1, sqsRequests: 3 });
    // Two of the three records' shares of the invocation's GB-seconds (each ran about as long)
    expect(k1.lambdaGbSeconds / (k1.lambdaGbSeconds + overhead.lambdaGbSeconds)).toBeGreaterThan(0.4);
    expect(await meter.get("nobody")).toEqual(zeroUsage);
  });

  it("bills the invocation's GB-seconds in proportion to each record's own time: a key that held the batch pays for it, not the key beside it", async () => {
    // Prepare: one key's ballot waits 300 ms (its voter is slow), the other's 1 ms, in one batch.
    const consumption = new ConsumptionMeter();
    const meter = new MemoryUsageMeter(new ManualClock(Date.parse("2026-12-03T10:00:00Z")));
    const voter: Voter = {
      id: "llm",
      vote: async (req: BallotRequest) => {
        await new Promise((r) => setTimeout(r, req.task.id === "slow" ? 300 : 1));
        return { voterId: "llm", ranking: req.candidates.map((c) => c.id) };
      },
    };
    const handler = createVoteHandler({
      voters: [voter],
      ballots: new MemoryBallotStore(),
      metering: { consumption, meter, memoryGb: 1 },
    });
    const slow = ballot("b-slow", "llm", { keyId: "k-slow" });
    (slow.body as { task: { id: string } }).task.id = "slow";
    // Act
    await handler(makeSqsEvent([slow, ballot("b-fast", "llm", { keyId: "k-fast" })]));
    // Assess: the slow key pays nearly all of the ~0.3 GB-s (an equal split would give each half).
    const [slowKey, fastKey] = [await meter.get("k-slow"), await meter.get("k-fast")];
    expect(slowKey.lambdaGbSeconds).toBeGreaterThan(0.25);
    expect(fastKey.lambdaGbSeconds / slowKey.lambdaGbSeconds).toBeLessThan(0.1);
  });
});
