import { describe, expect, it } from "vitest";
import { InvalidBallotError } from "@harness-s/core/voting";
import { ManualClock, createPool } from "@harness-s/core";
import { newApiKey, type ApiKeyRecord, type ApiKeyStore } from "@harness-s/core/access";
import type { Usage, UsageMeter } from "@harness-s/core/billing";
import type { Voter } from "@harness-s/core/voting";
import {
  CachedKeyStore,
  CachedPoolStore,
  MemoryApiKeyStore,
  MemoryPoolStore,
  MemoryUsageMeter,
} from "@harness-s/adapters/stores";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { makeSpec } from "../factories.ts";

/** A meter that records every write it is asked for. */
class CountingMeter extends MemoryUsageMeter {
  readonly writes: { kind: "add" | "addWithin"; usage: Partial<Usage> }[] = [];
  override add(keyId: string, usage: Partial<Usage>) {
    this.writes.push({ kind: "add", usage });
    return super.add(keyId, usage);
  }
  override addWithin(keyId: string, field: keyof Usage, amount: number, limit: number) {
    this.writes.push({ kind: "addWithin", usage: { [field]: amount } });
    return super.addWithin(keyId, field, amount, limit);
  }
}

const pool = createPool("p", makeSpec(), [
  makeSpec({ id: "sib-a", provenance: { direction: "recovery" } }),
  makeSpec({ id: "sib-b", provenance: { direction: "contract" } }),
]);
const llmVoter: Voter = {
  id: "llm-good",
  vote: async () => ({
    voterId: "llm-good",
    ranking: ["sib-b", "sib-a"],
    usage: { promptTokens: 100, completionTokens: 20 },
    costUsd: 0.003,
  }),
};
const garbageVoter: Voter = {
  id: "llm-garbage",
  vote: async () => {
    throw new InvalidBallotError("llm-garbage", "not JSON (after one retry)", {
      spent: { usage: { promptTokens: 80, completionTokens: 40 }, costUsd: 0.001 },
    });
  },
};

async function setup(quota?: number) {
  const meter = new CountingMeter();
  const deps = memoryApiDeps({ meter, voters: [llmVoter, garbageVoter], panel: { options: { quorum: 1 } } });
  await deps.pools.put(pool);
  const { secret, record } = newApiKey("k1", ["route"], quota);
  await deps.keys.put(record);
  const app = createApp(deps);
  const route = (poolId = "p") =>
    app.request("/v1/route", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ poolId, task: { id: "t1", family: "app" }, failureTags: ["x"] }),
    });
  return { meter, route };
}

describe("metering: one write per request", () => {
  it("a routed request is metered once: the request, its ballots, the tokens and cost of its ballots and abstentions, and its compute time", async () => {
    // Prepare
    const { meter, route } = await setup();
    // Act
    const res = await route();
    // Assess
    expect(res.status).toBe(200);
    expect(meter.writes).toHaveLength(1);
    const [write] = meter.writes;
    expect(write!.kind).toBe("add");
    expect(write!.usage).toMatchObject({ requests: 1, ballots: 1, llmTokens: 240, llmCostUsd: 0.004 });
    expect(write!.usage.computeMs).toBeGreaterThan(0);
    expect(await meter.get("k1")).toMatchObject({ requests: 1, ballots: 1, llmTokens: 240 });
  });

  it("a failed request is still metered once, as a request", async () => {
    const { meter, route } = await setup();
    expect((await route("nope")).status).toBe(404);
    expect(meter.writes).toEqual([{ kind: "add", usage: expect.objectContaining({ requests: 1 }) }]);
  });

  it("a write the store refuses is kept and sent with the key's next write: nothing is dropped (issue 30, item 8)", async () => {
    // Prepare: a meter whose store fails its first two writes (the request's, and its one retry).
    const { meter, route } = await setup();
    let failures = 2;
    const add = meter.add.bind(meter);
    meter.add = (keyId, usage) => (failures-- > 0 ? Promise.reject(new Error("store down")) : add(keyId, usage));
    // Act
    expect((await route()).status).toBe(200);
    expect(await meter.get("k1")).toMatchObject({ requests: 0 });
    expect((await route()).status).toBe(200);
    // Assess: both requests, both decisions' ballots and tokens.
    expect(await meter.get("k1")).toMatchObject({ requests: 2, ballots: 2, llmTokens: 480 });
  });

  it("a voter that reports its tokens only with its ballot is metered for them, also when the ballot is refused (unknown ids) and the quorum missed", async () => {
    const stray: Voter = {
      id: "stray",
      vote: async () => ({ voterId: "stray", ranking: ["nope"], usage: { promptTokens: 7, completionTokens: 3 } }),
    };
    const meter = new MemoryUsageMeter();
    const deps = memoryApiDeps({ meter, voters: [stray, garbageVoter], panel: { options: { quorum: 1 } } });
    await deps.pools.put(pool);
    const { secret, record } = newApiKey("k2", ["route"]);
    await deps.keys.put(record);
    const res = await createApp(deps).request("/v1/route", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ poolId: "p", task: { id: "t1", family: "app" }, failureTags: ["x"] }),
    });
    expect(res.status).toBe(503);
    expect(await meter.get("k2")).toMatchObject({ requests: 1, ballots: 0, llmTokens: 10 + 120, llmCostUsd: 0.001 });
  });

  it("a key with a quota takes its request in the atomic quota check, and the rest in one write at the end", async () => {
    const { meter, route } = await setup(1);
    expect((await route()).status).toBe(200);
    expect(meter.writes.map((w) => w.kind)).toEqual(["addWithin", "add"]);
    expect(meter.writes[1]!.usage).toMatchObject({ requests: 0, ballots: 1 });
    expect((await route()).status).toBe(429);
    expect(await meter.get("k1")).toMatchObject({ requests: 1, ballots: 1 });
  });
});

describe("read caches for the hot path", () => {
  class CountingKeys extends MemoryApiKeyStore {
    reads = 0;
    override findByHash(hash: string) {
      this.reads++;
      return super.findByHash(hash);
    }
  }

  it("serves a key from the cache within its TTL, reads it again after, and never caches an unknown hash", async () => {
    // Prepare
    const clock = new ManualClock(0);
    const inner = new CountingKeys();
    const keys: ApiKeyStore = new CachedKeyStore(inner, { ttlMs: 1_000, clock });
    const { record } = newApiKey("k1", ["route"]);
    // Act + Assess: unknown first, then created: found at once
    expect(await keys.findByHash(record.hash)).toBeUndefined();
    await inner.put(record);
    expect(await keys.findByHash(record.hash)).toEqual(record);
    expect(await keys.findByHash(record.hash)).toEqual(record);
    expect(inner.reads).toBe(2);
    clock.advance(1_001);
    await keys.findByHash(record.hash);
    expect(inner.reads).toBe(3);
  });

  it("a key changed through the cached store is seen at once", async () => {
    const keys = new CachedKeyStore(new MemoryApiKeyStore(), { ttlMs: 60_000, clock: new ManualClock(0) });
    const { record } = newApiKey("k1", ["route"]);
    await keys.put(record);
    await keys.findByHash(record.hash);
    const narrowed: ApiKeyRecord = { ...record, scopes: ["pools:read"] };
    await keys.put(narrowed);
    expect((await keys.findByHash(record.hash))!.scopes).toEqual(["pools:read"]);
  });

  it("reads a pool once for concurrent requests and keeps it within the TTL", async () => {
    let reads = 0;
    const inner = new MemoryPoolStore();
    await inner.put(pool);
    const counting = {
      ...inner,
      put: inner.put.bind(inner),
      list: inner.list.bind(inner),
      get: (id: string) => {
        reads++;
        return inner.get(id);
      },
    };
    const clock = new ManualClock(0);
    const pools = new CachedPoolStore(counting, { ttlMs: 5_000, clock });
    await Promise.all([pools.get("p"), pools.get("p"), pools.get("p")]);
    expect(reads).toBe(1);
    clock.advance(5_000);
    await pools.get("p");
    expect(reads).toBe(2);
  });
});

describe("usage meter totals", () => {
  it("adds LLM cost like every other field", async () => {
    const meter: UsageMeter = new MemoryUsageMeter();
    await meter.add("k", { llmCostUsd: 0.25 });
    await meter.add("k", { llmCostUsd: 0.5 });
    expect((await meter.get("k")).llmCostUsd).toBeCloseTo(0.75);
  });
});
