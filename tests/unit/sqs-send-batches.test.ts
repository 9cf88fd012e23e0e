import { describe, expect, it } from "vitest";
import type { SQSClient, SendMessageBatchCommand } from "@aws-sdk/client-sqs";
import { PartialSendError } from "@harness-s/core/messaging";
import { envelope } from "@harness-s/core/messaging";
import { SqsQueue } from "@harness-s/adapters/stores";
import { callerSlotSource } from "../factories.ts";

// Issue 54 (bench): a rescue's rollout messages go to SQS in batches of 10 sent at once, so a
// rescue of 32 waits one round trip, not four; what went out and what did not is still named
// exactly when some batches (or some entries) fail.
const messages = (n: number) =>
  Array.from({ length: n }, (_, index) =>
    envelope("rollout.requested", `rsc_1:${index}`, {
      jobId: "rsc_1",
      index,
      poolId: "p",
      harnessId: "h0",
      taskId: "t",
      seed: index,
      source: { kind: "caller", ...callerSlotSource },
      rescueJob: true,
    }),
  );

/**
 * An SQS client that answers each batch after a tick, as `answer` says (by the batch's first entry's message index),
 * counting batches in flight.
 */
function fakeSqs(answer: (first: number, size: number) => { Failed?: { Id: string; Message: string }[] } | Error) {
  const seen = { inFlight: 0, most: 0, batches: 0 };
  const sqs = {
    send: async (command: SendMessageBatchCommand) => {
      seen.batches++;
      seen.most = Math.max(seen.most, ++seen.inFlight);
      await new Promise((r) => setTimeout(r, 5));
      seen.inFlight--;
      const entries = command.input.Entries!;
      const out = answer(JSON.parse(entries[0]!.MessageBody!).body.index, entries.length);
      if (out instanceof Error) throw out;
      return { Successful: [], ...out };
    },
  } as unknown as SQSClient;
  return { queue: new SqsQueue(sqs, "http://127.0.0.1/q"), seen };
}

const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `rsc_1:${from + i}`);

describe("an SQS queue's send of many messages", () => {
  it("sends its batches of 10 at once", async () => {
    const { queue, seen } = fakeSqs(() => ({}));
    await queue.send(messages(32));
    expect(seen).toMatchObject({ batches: 4, most: 4 });
  });

  it("names what went out and what did not when one batch fails and another has an entry refused", async () => {
    const { queue } = fakeSqs((first) =>
      first === 10
        ? Object.assign(new Error("throttled"), { name: "ThrottlingException" })
        : first === 20
          ? { Failed: [{ Id: "3", Message: "too big" }] }
          : {},
    );
    const err = await queue.send(messages(32)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PartialSendError);
    const partial = err as PartialSendError;
    expect(partial.code).toBe("PARTIAL_SEND");
    expect(partial.queued.sort()).toEqual([...ids(0, 10), ...ids(20, 23), ...ids(24, 32)].sort());
    expect(partial.notQueued).toEqual([...ids(10, 20), "rsc_1:23"]);
  });

  it("names the refused entries when SQS took none of one batch's", async () => {
    const { queue } = fakeSqs((_, size) => ({
      Failed: Array.from({ length: size }, (_, j) => ({ Id: String(j), Message: "throttled" })),
    }));
    const err = (await queue.send(messages(3)).catch((e: unknown) => e)) as PartialSendError;
    expect(err).toMatchObject({ code: "PARTIAL_SEND", queued: [], notQueued: ids(0, 3) });
    expect(String((err.cause as Error).message)).toContain("SQS refused 3 of 3 messages: throttled");
  });

  it("answers the queue's own error when no batch went out", async () => {
    const { queue } = fakeSqs(() =>
      Object.assign(new Error("connect ECONNREFUSED"), { name: "Error", code: "ECONNREFUSED" }),
    );
    const err = await queue.send(messages(25)).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(PartialSendError);
    expect(err).toBeInstanceOf(Error);
  });
});
