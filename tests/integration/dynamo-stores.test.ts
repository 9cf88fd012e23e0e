import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { StoreUnavailableError, createPool } from "@harness-s/core";
import { ConsumptionMeter, instrumentDynamo } from "@harness-s/adapters/metering";
import { DynamoGatewayEpisodeStore, DynamoPoolStore, DynamoRolloutStore } from "@harness-s/adapters/stores";
import { createTables, dynamoStores, tableNames } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";
import { gatewayEpisodeStoreContract } from "../contract/gateway-episodes.contract.ts";
import { storeContract } from "../contract/stores.contract.ts";
import { bigRollout, rolloutStoreContract } from "../contract/rollouts.contract.ts";
import { makeSpec } from "../factories.ts";

let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let run = 0;

/** A client of the suite's DynamoDB Local (a test that instruments one destroys it). */
const localClient = () =>
  new DynamoDBClient({ endpoint: inject("dynamoEndpoint"), region: "us-east-1", credentials: localCredentials });

/** A client whose requests' consumed units are counted in `consumption`. */
function meteredClient() {
  const consumption = new ConsumptionMeter();
  const metered = localClient();
  instrumentDynamo(metered, consumption);
  return { consumption, metered };
}

beforeAll(async () => {
  client = localClient();
  doc = DynamoDBDocumentClient.from(client);
}, 60_000);
afterAll(async () => {
  client?.destroy();
});

storeContract("DynamoDB Local", async (clock) => {
  const names = tableNames(`t${++run}-`);
  await createTables(client, names);
  return dynamoStores(doc, names, { decisionTtlSeconds: 3600, ...(clock ? { clock } : {}) });
});

rolloutStoreContract("DynamoDB Local, a rescue's rollouts written together", async () => {
  const names = tableNames(`r${++run}-`);
  await createTables(client, names);
  return { rollouts: new DynamoRolloutStore(doc, names, "grouped") };
});

gatewayEpisodeStoreContract("DynamoDB Local", async () => {
  const names = tableNames(`g${++run}-`);
  await createTables(client, names);
  return new DynamoGatewayEpisodeStore(doc, names);
});

describe("DynamoDB adapters", () => {
  it("translate SDK failures into domain errors", async () => {
    const missing = new DynamoPoolStore(doc, tableNames("no-such-prefix-"));
    await expect(missing.get("x")).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(
      missing.put(createPool("x", makeSpec(), [makeSpec({ id: "s", provenance: { direction: "recon" } })])),
    ).rejects.toThrow(/put pool failed \(ResourceNotFoundException\)/);
  });

  it("lists every pool even when the Scan needs more than one page (DynamoDB reads 1 MB a page)", async () => {
    // Prepare: 14 pools of ~90 KB each (~1.3 MB of items), so one Scan page cannot hold them
    const names = tableNames(`scan${++run}-`);
    await createTables(client, names);
    const pools = new DynamoPoolStore(doc, names);
    const big = (i: number, j: number) =>
      makeSpec({
        id: `s${j}`,
        instruction: { systemAppend: "x".repeat(4000), toolNotes: {}, cues: [] },
        provenance: { direction: "recon", hypothesis: `${i}` },
      });
    for (let i = 0; i < 14; i++)
      await pools.put(
        createPool(
          `pool-${String(i).padStart(2, "0")}`,
          makeSpec(),
          Array.from({ length: 22 }, (_, j) => big(i, j)),
        ),
      );
    // Act
    const listed = await pools.list();
    // Assess
    expect(listed.map((p) => p.id)).toEqual(Array.from({ length: 14 }, (_, i) => `pool-${String(i).padStart(2, "0")}`));
    expect(listed.every((p) => p.siblings === 22)).toBe(true);
  }, 60_000);

  it("creating the tables twice is harmless", async () => {
    const names = tableNames("twice-");
    await createTables(client, names);
    await expect(createTables(client, names)).resolves.toBeUndefined();
  });
});

describe("DynamoRolloutStore chunking", () => {
  it("splits a rollout whose compressed size exceeds one item into several items", async () => {
    const { gzipSync } = await import("node:zlib");
    const { QueryCommand } = await import("@aws-sdk/lib-dynamodb");
    const { CHUNK_BYTES } = await import("@harness-s/adapters/stores");
    const names = tableNames("chunks-");
    await createTables(client, names);
    const big = bigRollout(4000, 9);
    const compressed = gzipSync(Buffer.from(JSON.stringify(big))).length;
    expect(compressed).toBeGreaterThan(CHUNK_BYTES);
    await new DynamoRolloutStore(doc, names).put("job", 0, big);
    const items = await doc.send(
      new QueryCommand({
        TableName: names.Rollouts,
        KeyConditionExpression: "jobId = :j",
        ExpressionAttributeValues: { ":j": "job" },
      }),
    );
    expect(items.Items).toHaveLength(Math.ceil(compressed / CHUNK_BYTES));
  }, 60_000);

  it("stores a rollout of one chunk for one write unit (a transaction bills twice), and its duplicate for one", async () => {
    // Prepare
    const names = tableNames("one-chunk-");
    await createTables(client, names);
    const { consumption, metered } = meteredClient();
    const store = new DynamoRolloutStore(DynamoDBDocumentClient.from(metered), names);
    const used = [{}, {}] as { dynamoWriteUnits?: number }[];
    // Act
    const stored = await consumption.within(used[0]!, () => store.put("job", 0, bigRollout(3)));
    const again = await consumption.within(used[1]!, () => store.put("job", 0, bigRollout(3)));
    metered.destroy();
    // Assess
    expect([stored, again]).toEqual(["stored", "duplicate"]);
    expect(used.map((u) => u.dynamoWriteUnits)).toEqual([1, 1]);
  }, 60_000);

  it("grouped: a rescue's rollouts that end together go in one request; one stored already costs one request more", async () => {
    // Prepare
    const names = tableNames("grouped-");
    await createTables(client, names);
    const counted = localClient();
    let requests = 0;
    counted.middlewareStack.add(
      (next) => (args) => {
        requests++;
        return next(args);
      },
      { step: "initialize" },
    );
    const store = new DynamoRolloutStore(DynamoDBDocumentClient.from(counted), names, "grouped");
    // Act
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => store.put("job", i, bigRollout(3, i))));
    const firstRequests = requests;
    const second = await Promise.all([10, 11, 4].map((i) => store.put("job", i, bigRollout(3, i))));
    counted.destroy();
    // Assess
    expect(first).toEqual(Array(10).fill("stored"));
    expect(firstRequests).toBe(1);
    expect(second).toEqual(["stored", "stored", "duplicate"]);
    expect(requests - firstRequests).toBe(2);
    expect((await store.list("job")).map((r) => r.index)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  }, 60_000);

  it("grouped: a rollout that cannot be written fails alone; the rest of its group are stored", async () => {
    const names = tableNames("grouped-alone-");
    await createTables(client, names);
    const store = new DynamoRolloutStore(doc, names, "grouped");
    const invalid = { ...bigRollout(2, 40), reward: "high" } as unknown as ReturnType<typeof bigRollout>;
    const outcomes = await Promise.allSettled(
      [0, 1, 2].map((i) => store.put("job", i, i === 1 ? invalid : bigRollout(2, i))),
    );
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await store.list("job")).map((r) => r.index)).toEqual([0, 2]);
  }, 60_000);

  it("grouped: metered at the cloud's price of a transaction, twice each rollout's units (DynamoDB Local reports one item's for all)", async () => {
    // Prepare
    const names = tableNames("grouped-units-");
    await createTables(client, names);
    const { consumption, metered } = meteredClient();
    const used = { each: {}, grouped: {} } as Record<"each" | "grouped", { dynamoWriteUnits?: number }>;
    // Act
    for (const writes of ["each", "grouped"] as const) {
      const store = new DynamoRolloutStore(DynamoDBDocumentClient.from(metered), names, writes);
      await consumption.within(used[writes], () =>
        Promise.all(Array.from({ length: 10 }, (_, i) => store.put(writes, i, bigRollout(40, i)))),
      );
    }
    metered.destroy();
    // Assess: each rollout is several KB, so one item's units would be far short.
    expect(used.each.dynamoWriteUnits).toBeGreaterThan(30);
    expect(used.grouped.dynamoWriteUnits).toBe(2 * used.each.dynamoWriteUnits!);
  }, 60_000);
});
