import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoRescueSlots } from "@harness-s/adapters/stores";
import { createTables, tableNames } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";

let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;

beforeAll(async () => {
  client = new DynamoDBClient({
    endpoint: inject("dynamoEndpoint"),
    region: "us-east-1",
    credentials: localCredentials,
  });
  doc = DynamoDBDocumentClient.from(client);
}, 60_000);
afterAll(() => client?.destroy());

/** The document client, counting the writes and the reads sent through it. */
function countingWrites(inner: DynamoDBDocumentClient) {
  const writes = { n: 0, reads: 0 };
  const counted = new Proxy(inner, {
    get: (target, prop) =>
      prop === "send"
        ? (command: { constructor: { name: string } }) => {
            if (command.constructor.name === "UpdateCommand") writes.n++;
            if (command.constructor.name === "GetCommand") writes.reads++;
            return target.send(command as never);
          }
        : Reflect.get(target, prop),
  });
  return { counted, writes };
}

// Issue 54, item 5 (the rescue bench at 32 in flight): a dispatch worker holds one of its key's
// running places per caller rollout, on one item per key. Its holds and releases asked for at once
// used to race each other for that item (a read-modify-write under a version): past 8 conflicts a
// hold gave up (its rollout deferred 3 to 7 s) and a release gave up (its place held for 6 minutes).
describe("DynamoRescueSlots under one process's concurrent holds and releases of one key", () => {
  it("answers every hold and release (none gives up), never passes the limit, and writes them in a few grouped writes", async () => {
    const names = tableNames("contention-");
    await createTables(client, names);
    const { counted, writes } = countingWrites(doc);
    const slots = new DynamoRescueSlots(counted, names, "runningHolds");
    const held = await Promise.all(Array.from({ length: 40 }, (_, i) => slots.hold("k", `job:${i}`, 1, 32, 0, 60_000)));
    expect(held.filter(Boolean)).toHaveLength(32);
    expect(await slots.held("k", 0)).toBe(32);
    await Promise.all(held.map((h, i) => (h ? slots.release("k", `job:${i}`) : undefined)));
    expect(await slots.held("k", 0)).toBe(0);
    // One write for the first hold, one for those asked for meanwhile; the same for the releases.
    expect(writes.n).toBeLessThanOrEqual(6);
  }, 30_000);
});

// The bench's round trips: a process that wrote a key's holds last writes the next change from
// what it wrote (one request, not a read and a write), and rereads when another process wrote since.
describe("DynamoRescueSlots remembering what it wrote", () => {
  it("holds and releases one at a time in one request each, after the first read", async () => {
    const names = tableNames("remembered-");
    await createTables(client, names);
    const { counted, writes } = countingWrites(doc);
    const slots = new DynamoRescueSlots(counted, names, "runningHolds");
    for (let i = 0; i < 5; i++) {
      expect(await slots.hold("k", `job:${i}`, 1, 8, 0, 60_000)).toBe(true);
      await slots.release("k", `job:${i}`);
    }
    expect(writes.n).toBe(10);
    expect(writes.reads).toBe(1);
  }, 30_000);

  it("two processes on one key never pass its limit: a stale memory fails its version check and is read again", async () => {
    const names = tableNames("two-writers-");
    await createTables(client, names);
    const a = new DynamoRescueSlots(doc, names, "runningHolds");
    const b = new DynamoRescueSlots(doc, names, "runningHolds");
    expect(await a.hold("k", "a:0", 2, 4, 0, 60_000)).toBe(true);
    expect(await b.hold("k", "b:0", 2, 4, 0, 60_000)).toBe(true);
    // a remembers 2 held; 4 are: its next hold must see b's and be refused.
    expect(await a.hold("k", "a:1", 1, 4, 0, 60_000)).toBe(false);
    await b.release("k", "b:0");
    expect(await a.hold("k", "a:1", 2, 4, 0, 60_000)).toBe(true);
    // b remembers its own release only; a's holds stand after b's next change.
    expect(await b.hold("k", "b:1", 1, 4, 0, 60_000)).toBe(false);
    expect(await a.held("k", 0)).toBe(4);
    // A release remembered as nothing to write is checked against what is stored.
    await a.release("k", "a:0");
    await b.release("k", "a:1");
    expect(await a.held("k", 0)).toBe(0);
    // A hold taken by another process since: a remembers the key without it, and still releases it.
    expect(await b.hold("k", "x", 3, 4, 0, 60_000)).toBe(true);
    await a.release("k", "x");
    expect(await b.held("k", 0)).toBe(0);
  }, 30_000);
});
