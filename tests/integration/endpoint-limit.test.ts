import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { DynamoPolicyEndpointStore, MemoryPolicyEndpointStore } from "@harness-s/adapters/stores";
import { createTables, tableNames } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";
import { ENDPOINTS_PER_KEY, type PolicyEndpointStore } from "@harness-s/core/callers";
import { endpointStoreContract } from "../contract/endpoints.contract.ts";
import { addKey, memoryApiDeps, startApi } from "../api-factory.ts";

// Issue 52, item 9: the 100-endpoint limit per key held under concurrency (it was a list, then a
// put: 150 concurrent registrations stored 102), on the memory store and on DynamoDB Local.
let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let run = 0;
beforeAll(() => {
  client = new DynamoDBClient({
    endpoint: inject("dynamoEndpoint"),
    region: "us-east-1",
    credentials: localCredentials,
  });
  doc = DynamoDBDocumentClient.from(client);
});
afterAll(() => client?.destroy());

const dynamoStore = async () => {
  const names = tableNames(`lim${++run}-`);
  await createTables(client, names);
  return { store: new DynamoPolicyEndpointStore(doc, names), names };
};
const stores: [string, () => Promise<PolicyEndpointStore>][] = [
  ["memory", async () => new MemoryPolicyEndpointStore()],
  ["DynamoDB Local", async () => (await dynamoStore()).store],
];

for (const [name, fresh] of stores) endpointStoreContract(name, fresh);

describe.each(stores)("POST /v1/policy-endpoints over HTTP, %s store", (_name, fresh) => {
  it("150 concurrent registrations: exactly 100 stored, 50 refused 409 CONFLICT; a re-registration counts once; a delete frees one place", {
    timeout: 120_000,
  }, async () => {
    // Every probe waits a little, so every registration has listed the key's endpoints before any is stored.
    const prober = {
      probe: async () => {
        await new Promise((r) => setTimeout(r, 20));
        return { weightVersion: 1, checkedAt: Date.now() };
      },
    };
    const deps = memoryApiDeps({ endpoints: await fresh(), prober });
    const key = await addKey(deps, "k-limit", ["rescues"]);
    const api = await startApi(deps);
    const call = (method: string, path = "", body?: unknown) =>
      fetch(`${api.url}/v1/policy-endpoints${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    const register = (id: string) =>
      call("POST", "", { id, kind: "protocol-v2", url: "http://policy.example.com/", policy: "p1" });
    try {
      const answers = await Promise.all(
        Array.from({ length: 150 }, (_, i) =>
          register(`e${i}`).then(async (r) => [r.status, (await r.json()).error?.code ?? "ok"]),
        ),
      );
      expect(answers.filter(([s]) => s === 201).length).toBe(ENDPOINTS_PER_KEY);
      expect(answers.filter(([s, c]) => s === 409 && c === "CONFLICT").length).toBe(50);
      const listed = async () => ((await (await call("GET")).json()) as { endpoints: { id: string }[] }).endpoints;
      const stored = await listed();
      expect(stored.length).toBe(100);
      // Re-registering ids it holds (an update), concurrently, while full: each is taken, none counted twice.
      const again = await Promise.all(stored.slice(0, 10).map((e) => register(e.id)));
      expect(again.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect((await register("one-more")).status).toBe(409);
      expect((await call("DELETE", `/${stored[0]!.id}`)).status).toBe(200);
      expect((await Promise.all([register("one-more"), register("two-more")])).map((r) => r.status).sort()).toEqual([
        201, 409,
      ]);
      expect((await listed()).length).toBe(100);
    } finally {
      await api.close();
    }
  });
});

describe("DynamoPolicyEndpointStore across processes", () => {
  it("150 puts from 6 processes at once (each its own store on one table): exactly 100 stored, the counter's condition deciding", {
    timeout: 120_000,
  }, async () => {
    const { names } = await dynamoStore();
    const processes = Array.from({ length: 6 }, () => new DynamoPolicyEndpointStore(doc, names));
    const record = (i: number) => ({
      keyId: "k1",
      id: `e${i}`,
      kind: "protocol-v2" as const,
      url: "http://policy.example.com/",
      policy: "p1",
      createdAt: 1,
      probe: { weightVersion: 1, checkedAt: 1 },
    });
    const outcomes = await Promise.all(
      Array.from({ length: 150 }, (_, i) => processes[i % 6]!.put(record(i), ENDPOINTS_PER_KEY)),
    );
    expect([outcomes.filter((o) => o === "created").length, outcomes.filter((o) => o === "full").length]).toEqual([
      100, 50,
    ]);
    const stored = await processes[0]!.list("k1");
    expect(stored.length).toBe(100);
    // One that was stored (which 100 of the 150 were is the race's), deleted by two processes at once: one deletes it.
    const id = stored[0]!.id;
    expect((await Promise.all([processes[1]!.delete("k1", id), processes[2]!.delete("k1", id)])).sort()).toEqual([
      false,
      true,
    ]);
    expect((await Promise.all(processes.map((p, i) => p.put(record(1000 + i), ENDPOINTS_PER_KEY)))).sort()).toEqual([
      "created",
      "full",
      "full",
      "full",
      "full",
      "full",
    ]);
  });
});

describe("DynamoPolicyEndpointStore when DynamoDB cancels a transaction for a conflict", () => {
  it("tries it again: every transaction cancelled twice for a conflict still answers, the limit held", async () => {
    const { names } = await dynamoStore();
    let conflicts = 0;
    const conflicting = {
      send: (command: { constructor: { name: string } }) => {
        if (command.constructor.name === "TransactWriteCommand" && conflicts++ % 3 < 2)
          return Promise.reject(
            Object.assign(new Error("cancelled"), {
              name: "TransactionCanceledException",
              CancellationReasons: [{ Code: "None" }, { Code: "TransactionConflict" }],
            }),
          );
        return doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const store = new DynamoPolicyEndpointStore(conflicting, names);
    const record = {
      keyId: "k1",
      id: "e1",
      kind: "protocol-v2" as const,
      url: "http://policy.example.com/",
      policy: "p1",
      createdAt: 1,
      probe: { weightVersion: 1, checkedAt: 1 },
    };
    expect(await store.put(record, 1)).toBe("created");
    expect(await store.put({ ...record, id: "e2" }, 1)).toBe("full");
    expect(await store.delete("k1", "e1")).toBe(true);
    // Four transactions (the first put's twice: once before its key's counter existed), three sends each.
    expect(conflicts).toBe(12);
  });
});

describe("DynamoPolicyEndpointStore with records written before its counter", () => {
  it("counts them on its first write: a key holding the limit already is full, a delete frees one place", async () => {
    const { store, names } = await dynamoStore();
    for (let i = 0; i < 3; i++)
      await doc.send(
        new PutCommand({
          TableName: names.PolicyEndpoints,
          Item: {
            keyId: "old",
            id: `e${i}`,
            kind: "protocol-v2",
            url: "http://policy.example.com/",
            policy: "p1",
            createdAt: 1,
            probe: { weightVersion: null, checkedAt: 1 },
          },
        }),
      );
    expect(
      await Promise.all([
        store.put({ ...(await store.get("old", "e0"))!, policy: "p2" }, 3),
        store.put({ ...(await store.get("old", "e0"))!, id: "new" }, 3),
      ]),
    ).toEqual(["replaced", "full"]);
    expect(await store.delete("old", "e1")).toBe(true);
    expect(await store.put({ ...(await store.get("old", "e0"))!, id: "new" }, 3)).toBe("created");
    expect((await store.list("old")).map((r) => r.id).sort()).toEqual(["e0", "e2", "new"]);
  });
});
