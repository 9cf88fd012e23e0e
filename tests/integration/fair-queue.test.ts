import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { Envelope, envelope } from "@harness-s/core/messaging";
import { SqsQueue, createQueueWithDlq } from "@harness-s/adapters/stores";
import { localCredentials } from "@harness-s/adapters/local";
import { NOISY_TENANT, fairOrder, startFairFauxqs } from "../../functions/local/fair-queues.ts";
import { countingProxy } from "../counting-proxy.ts";

// Issue 52, item 4: the dispatch queue is a fair queue. Deployed, each message carries its key as
// MessageGroupId on a standard queue (SQS fair queues); locally fauxqs (1.9.2) drops that
// attribute and delivers first in, first out, so the local stack's queues are made to deliver as
// a fair queue does: while a key is noisy (≥ 30 in flight and > 10% of them), a quiet key's
// message comes first.
let fauxqs: Awaited<ReturnType<typeof startFairFauxqs>>;
let proxy: Awaited<ReturnType<typeof countingProxy>>;
let sqs: SQSClient;
let n = 0;

beforeAll(async () => {
  fauxqs = await startFairFauxqs();
  proxy = await countingProxy(`http://127.0.0.1:${fauxqs.port}`);
  sqs = new SQSClient({ endpoint: proxy.url, region: "us-east-1", credentials: localCredentials });
});
afterAll(async () => {
  sqs?.destroy();
  await proxy?.stop();
  await fauxqs?.stop();
});

const message = (key: string | undefined, i: number) =>
  envelope(
    "profile.evidence",
    `${key ?? "none"}-${i}-${++n}`,
    {
      poolId: "p",
      harnessId: "h",
      family: "f",
      success: true,
      rescueOf: [],
      taskTags: [],
      turns: 1,
      policyVersion: 0,
      behaviours: {},
    },
    key ? { keyId: key } : undefined,
  );

async function fresh() {
  const { url } = await createQueueWithDlq(sqs, `fair-${++n}`, { maxReceiveCount: 3, visibilityTimeoutSeconds: 60 });
  return { url, queue: new SqsQueue(sqs, url) };
}

/** Receives up to `count` messages, leaving them in flight; their payers' keys in delivery order. */
async function take(url: string, count: number): Promise<(string | undefined)[]> {
  const keys: (string | undefined)[] = [];
  while (keys.length < count) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: Math.min(10, count - keys.length),
        WaitTimeSeconds: 1,
      }),
    );
    if (!out.Messages?.length) break;
    for (const m of out.Messages) keys.push(Envelope.parse(JSON.parse(m.Body!)).payer?.keyId);
  }
  return keys;
}

describe("the local dispatch queue delivers as an SQS fair queue", () => {
  it("sends each message's key as its MessageGroupId (the deployed queue's tenant), none for a message without a payer", async () => {
    const { url, queue } = await fresh();
    const before = proxy.exchanges.length;
    await queue.send([message("k-a", 1), message(undefined, 2)]);
    const sent = proxy.exchanges.slice(before).find((e) => e.target.endsWith("SendMessageBatch"))!;
    const entries = JSON.parse(sent.request).Entries as { MessageGroupId?: string }[];
    expect(entries.map((e) => e.MessageGroupId)).toEqual(["k-a", undefined]);
    expect(await take(url, 2)).toHaveLength(2);
  });

  it("while one key is noisy, another key's message is delivered before that key's backlog", async () => {
    const { url, queue } = await fresh();
    await queue.send(Array.from({ length: 80 }, (_, i) => message("k-noisy", i)));
    expect(await take(url, NOISY_TENANT.inFlight + 10)).toEqual(Array(NOISY_TENANT.inFlight + 10).fill("k-noisy"));
    await queue.send([message("k-quiet", 0)]);
    // 40 ready messages of the noisy key were sent first; the quiet key's comes out at once.
    expect((await take(url, 1))[0]).toBe("k-quiet");
  });

  it("while no key is noisy, delivery stays first in, first out", async () => {
    const { url, queue } = await fresh();
    await queue.send(Array.from({ length: 12 }, (_, i) => message("k-a", i)));
    expect(await take(url, 5)).toEqual(Array(5).fill("k-a"));
    await queue.send([message("k-b", 0)]);
    expect(await take(url, 8)).toEqual([...Array(7).fill("k-a"), "k-b"]);
  });
});

describe("fair order (pure)", () => {
  const held = (key: string | undefined, id: string) => ({
    messageId: id,
    body: JSON.stringify(key ? { payer: { keyId: key } } : {}),
  });
  it("puts quiet tenants first in arrival order, then noisy ones by fewest in flight", () => {
    const ready = [
      held("a", "1"),
      held("b", "2"),
      held("a", "3"),
      held("c", "4"),
      held(undefined, "5"),
      held("b", "6"),
    ];
    const inFlight = new Map([
      ["key:a", 40],
      ["key:b", 31],
    ]);
    expect(fairOrder(ready, inFlight, 10).map((m) => m.messageId)).toEqual(["4", "5", "2", "6", "1", "3"]);
    expect(fairOrder(ready, inFlight, 2).map((m) => m.messageId)).toEqual(["4", "5", "1", "2", "3", "6"]);
    expect(fairOrder(ready, new Map([["key:a", 29]]), 10).map((m) => m.messageId)).toEqual([
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
    ]);
  });
});
