import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoRateBlocks, DynamoRescueSlots, DynamoRunningPlaces } from "@harness-s/adapters/stores";
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

// Issue 71, item 2: a key's running caller rollouts are held by many dispatch invocations at once
// (each its own process, deployed). Each holds a place of its own (an item per place), so holds
// from several writers conflict only when two pick the same place, and a place whose holder died
// lapses with its lease.
describe("DynamoRunningPlaces held by several writers at once", () => {
  it("never passes the limit, answers every hold (conflicts retried on other places), releases, and lets a dead holder's lease lapse", async () => {
    const names = tableNames("places-");
    await createTables(client, names);
    const writers = Array.from({ length: 4 }, () => new DynamoRunningPlaces(doc, names));
    // 4 writers × 12 holds at once, on one key of 32 places.
    const held = await Promise.all(
      writers.flatMap((w, p) =>
        Array.from({ length: 12 }, (_, i) =>
          w.hold("k", `job:${p}:${i}`, 1, 32, 0, 60_000).catch((err: Error) => err.name),
        ),
      ),
    );
    const taken = held.filter((h) => h === true).length;
    expect(taken).toBeGreaterThan(0);
    expect(taken).toBeLessThanOrEqual(32);
    expect(await writers[0]!.held("k", 0)).toBe(taken);
    expect(new Set((await writers[0]!.leases("k")).map((l) => l.holder)).size).toBe(taken);
    // Each place holds one lease: the items are the places.
    expect((await writers[0]!.leases("k")).every((l) => Number(l.place) < 32)).toBe(true);
    const stats = writers.map((w) => w.stats);
    expect(stats.reduce((n, s) => n + s.holds, 0)).toBe(48);
    // A renewal by its holder extends the lease; another holder's renewal of it is refused.
    const mine = (await writers[0]!.leases("k")).find((l) => l.holder.startsWith("job:0:"))!;
    expect(await writers[0]!.renew("k", mine.holder, 0, 90_000)).toBe(true);
    expect((await writers[0]!.leases("k")).find((l) => l.holder === mine.holder)!.until).toBe(90_000);
    // Released by each writer: none left.
    await Promise.all(writers.flatMap((w, p) => Array.from({ length: 12 }, (_, i) => w.release("k", `job:${p}:${i}`))));
    expect(await writers[0]!.held("k", 0)).toBe(0);
    // A holder that died (never released): its lease lapses at its until, and its place is taken again.
    const dead = new DynamoRunningPlaces(doc, names);
    expect(await dead.hold("k2", "dead", 1, 1, 0, 1_000)).toBe(true);
    expect(await writers[1]!.hold("k2", "next", 1, 1, 500, 60_000)).toBe(false);
    expect(await writers[1]!.hold("k2", "next", 1, 1, 1_000, 60_000)).toBe(true);
    // The dead holder's late release does not free the place its successor holds.
    await dead.release("k2", "dead");
    expect(await writers[1]!.held("k2", 1_000)).toBe(1);
  }, 30_000);

  it("counts a conflict when two writers pick the same free place, and the loser takes another", async () => {
    const names = tableNames("places-race-");
    await createTables(client, names);
    const a = new DynamoRunningPlaces(doc, names);
    const b = new DynamoRunningPlaces(doc, names);
    // Both read the key empty; with 2 places, half the time both try the same one first.
    for (let i = 0; i < 12; i++) {
      const [x, y] = await Promise.all([a.hold(`r${i}`, "a", 1, 2, 0, 60_000), b.hold(`r${i}`, "b", 1, 2, 0, 60_000)]);
      expect([x, y]).toEqual([true, true]);
      expect(await a.held(`r${i}`, 0)).toBe(2);
    }
    expect(a.stats.conflicts + b.stats.conflicts).toBeGreaterThan(0);
    expect(a.stats.writes + b.stats.writes).toBe(24 + a.stats.conflicts + b.stats.conflicts);
  }, 30_000);
});

// The bench's round trips: a process that wrote a key's holds last writes the next change from
// what it wrote (one request, not a read and a write), and rereads when another process wrote since.
describe("DynamoRescueSlots remembering what it wrote", () => {
  it("holds and releases one at a time in one request each, after the first read", async () => {
    const names = tableNames("remembered-");
    await createTables(client, names);
    const { counted, writes } = countingWrites(doc);
    const slots = new DynamoRescueSlots(counted, names);
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
    const a = new DynamoRescueSlots(doc, names);
    const b = new DynamoRescueSlots(doc, names);
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

// Issue 71, item 4: a key's shared rate bucket, leased by several API instances at once, never grants more tokens than
// it holds (its writes are version-checked: an instance that lost rereads).
describe("DynamoRateBlocks leased by several instances at once", () => {
  it("grants exactly the bucket's tokens, however the leases interleave; a full one tells the wait", async () => {
    const names = tableNames("rate-");
    await createTables(client, names);
    const instances = Array.from({ length: 3 }, () => new DynamoRateBlocks(doc, names));
    const rate = { perSecond: 10, burst: 10 };
    const leases = await Promise.all(
      instances.flatMap((b) => Array.from({ length: 4 }, () => b.lease("k", rate, 0, 2).catch(() => undefined))),
    );
    const granted = leases.reduce((n, l) => n + (l?.granted ?? 0), 0);
    expect(granted).toBeLessThanOrEqual(10);
    // Every token is leased once the contention is over: the bucket ends empty, whoever asks.
    let rest = 0;
    for (const b of instances) rest += (await b.lease("k", rate, 0, 10)).granted;
    expect(granted + rest).toBe(10);
    expect(await instances[0]!.lease("k", rate, 0, 1)).toEqual({ granted: 0, waitMs: 100 });
    expect((await instances[1]!.lease("k", rate, 500, 10)).granted).toBe(5);
  }, 30_000);
});
