import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoRescueSlots, createTables, localCredentials, tableNames } from "@harness-s/adapters";

let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;

beforeAll(async () => {
  client = new DynamoDBClient({ endpoint: inject("dynamoEndpoint"), region: "us-east-1", credentials: localCredentials });
  doc = DynamoDBDocumentClient.from(client);
}, 60_000);
afterAll(() => client?.destroy());

/** The document client, counting the writes sent through it. */
function countingWrites(inner: DynamoDBDocumentClient) {
  const writes = { n: 0 };
  const counted = new Proxy(inner, {
    get: (target, prop) =>
      prop === "send"
        ? (command: { constructor: { name: string } }) => {
            if (command.constructor.name === "UpdateCommand") writes.n++;
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
