import { describe, expect, it } from "vitest";
import { ValidationError } from "@harness-s/core";
import type { Envelope, MessageQueue } from "@harness-s/core/messaging";
import { makeSpec } from "../factories.ts";

export interface QueueUnderTest {
  queue: MessageQueue;
  /** Everything a consumer would receive (and acknowledge) from now on, waiting up to ~2 s for stragglers. */
  receiveAll: (expected: number) => Promise<Envelope[]>;
}

const examples = (n: number): Envelope[] =>
  Array.from({ length: n }, (_, i): Envelope => {
    switch (i % 4) {
      case 0:
        return {
          v: 1,
          id: `ev-${i}`,
          type: "profile.evidence",
          body: {
            poolId: "p",
            harnessId: "h",
            family: "app",
            success: i % 3 === 0,
            rescueOf: ["x"],
            taskTags: [],
            turns: i,
            policyVersion: 2,
            behaviours: { verify: true },
          },
        };
      case 1:
        return {
          v: 1,
          id: `ro-${i}`,
          type: "rollout.requested",
          body: {
            jobId: "j",
            index: i,
            poolId: "p",
            harnessId: "h",
            taskId: "t",
            seed: -i,
            source: { kind: "service", policyId: "default" },
          },
        };
      case 2:
        return {
          v: 1,
          id: `ba-${i}`,
          type: "ballot.requested",
          body: {
            ballotKey: `k${i}`,
            decisionId: "d",
            voterId: "v",
            task: { id: "t", family: "app", tags: ["a"] },
            failureTags: [],
            failedEvents: [],
            candidates: [makeSpec()],
            profiles: {},
            k: 1,
          },
        };
      default:
        return { v: 1, id: `ex-${i}`, type: "experiment.requested", body: { experimentId: `e${i}` } };
    }
  });

/** What every MessageQueue adapter must do, whatever carries the messages. */
export function queueContract(name: string, fresh: () => Promise<QueueUnderTest>): void {
  describe(`queue contract: ${name}`, () => {
    it("delivers every envelope type intact, in batches larger than SQS's 10", async () => {
      const q = await fresh();
      const sent = examples(25);
      await q.queue.send(sent);
      const got = await q.receiveAll(sent.length);
      expect([...got].sort((a, b) => (a.id < b.id ? -1 : 1))).toEqual([...sent].sort((a, b) => (a.id < b.id ? -1 : 1)));
    });

    it("refuses an invalid envelope with the bad field named, and sends nothing of that call", async () => {
      const q = await fresh();
      const bad = {
        v: 1,
        id: "bad",
        type: "rollout.requested",
        body: { jobId: "j", index: -1 },
      } as unknown as Envelope;
      const err = await q.queue.send([examples(1)[0]!, bad]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues.join(" ")).toMatch(/index/);
      expect(await q.receiveAll(0)).toEqual([]);
    });
  });
}
