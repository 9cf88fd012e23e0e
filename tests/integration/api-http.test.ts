import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type HarnessPool } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeSpec } from "../factories.ts";

let api: { url: string; close: () => Promise<void> };
let deps: ReturnType<typeof memoryApiDeps>;
let inst: SeedInstance;
let key: string;

const post = (path: string, body: unknown, secret?: string, raw?: string) =>
  fetch(`${api.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
    body: raw ?? JSON.stringify(body),
  });
const get = (path: string, secret?: string) =>
  fetch(`${api.url}${path}`, { headers: secret ? { authorization: `Bearer ${secret}` } : {} });

beforeAll(async () => {
  inst = await embeddedSetup(defaultEmbeddedSettings).instance(1);
  deps = memoryApiDeps();
  await seedPool(deps, inst.evolution.pool, inst.evolution.initialProfiles);
  key = await addKey(deps, "k-all", ["route", "pools:read", "pools:write", "profiles:read"]);
  api = await startApi(deps);
}, 120_000); // evolving the pool is CPU work: on a loaded machine well past the default 10 s
afterAll(() => api?.close());

describe("POST /v1/route over HTTP", () => {
  it("ranks k siblings for a failed group of an embedded task, with every voter's ballot, and records it", async () => {
    const task = inst.train.find((t) => t.requirements.includes("pages"))!;
    const res = await post(
      "/v1/route",
      {
        poolId: inst.evolution.pool.id,
        task: { id: task.id, family: task.family, tags: task.tags },
        failureTags: ["incomplete-results"],
        failedEvents: ["page:more"],
        k: 2,
      },
      key,
    );
    expect(res.status).toBe(200);
    const d = await res.json();
    expect(d.chosen).toHaveLength(2);
    expect(d.ranked).toHaveLength(inst.evolution.pool.siblings.length);
    expect(d.ballots.map((b: { voterId: string }) => b.voterId)).toEqual([
      "failure-tag-evidence",
      "task-tag-evidence",
      "spec-affinity",
    ]);
    expect(d.poolVersion).toBe(inst.evolution.pool.version);
    const again = await get(`/v1/decisions/${d.id}`, key);
    expect((await again.json()).chosen).toEqual(d.chosen);
  });

  it("includes H0 for Rank-1 requests without failure tags", async () => {
    const res = await post(
      "/v1/route",
      { poolId: inst.evolution.pool.id, task: { id: "x", family: "db", tags: ["db"] }, k: 1 },
      key,
    );
    const d = await res.json();
    expect(d.ranked.map((r: { harnessId: string }) => r.harnessId)).toContain("h0");
  });

  it("answers 401 without a key or with an unknown key", async () => {
    expect((await post("/v1/route", { poolId: "p", task: { id: "t", family: "app" } })).status).toBe(401);
    const res = await post("/v1/route", { poolId: "p", task: { id: "t", family: "app" } }, "hs_not-a-key");
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe("UNAUTHENTICATED");
  });

  it("answers 403 when the key lacks the scope", async () => {
    const readOnly = await addKey(deps, "k-read", ["pools:read"]);
    const res = await post("/v1/route", { poolId: "p", task: { id: "t", family: "app" } }, readOnly);
    expect(res.status).toBe(403);
    expect((await res.json()).error.message).toMatch(/scope route/);
  });

  it("answers 400 naming the bad field for malformed JSON, and 413 for oversized bodies", async () => {
    const bad = await post("/v1/route", { poolId: "p", task: { id: "t" }, k: 0 }, key);
    expect(bad.status).toBe(400);
    const body = await bad.json();
    expect(body.error.issues.some((i: string) => i.startsWith("task.family:"))).toBe(true);
    expect(body.error.issues.some((i: string) => i.startsWith("k:"))).toBe(true);
    const malformed = await post("/v1/route", undefined, key, "{not json");
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.issues).toEqual(["(root): not valid JSON"]);
    const big = await post(
      "/v1/route",
      { poolId: "p", task: { id: "t", family: "app", instruction: "x".repeat(70_000) } },
      key,
    );
    expect(big.status).toBe(413);
    expect((await big.json()).error).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      message: "request body exceeds 65536 bytes",
    });
  });

  it("answers 404 for an unknown pool", async () => {
    const res = await post("/v1/route", { poolId: "nope", task: { id: "t", family: "app" } }, key);
    expect(res.status).toBe(404);
  });

  it("meters requests, ballots and compute time per key and answers 429 past the quota", async () => {
    const metered = await addKey(deps, "k-quota", ["route"], 2);
    const body = {
      poolId: inst.evolution.pool.id,
      task: { id: "t", family: "app", tags: ["app"] },
      failureTags: ["unauthorized"],
    };
    expect((await post("/v1/route", body, metered)).status).toBe(200);
    expect((await post("/v1/route", body, metered)).status).toBe(200);
    const third = await post("/v1/route", body, metered);
    expect(third.status).toBe(429);
    expect(await deps.meter.get("k-quota")).toMatchObject({ requests: 2, ballots: 6 });
    expect((await deps.meter.get("k-quota")).computeMs).toBeGreaterThan(0);
    const usage = await (await get("/v1/usage", metered)).json();
    expect(usage).toMatchObject({ keyId: "k-quota", requestQuota: 2, usage: { requests: 2, ballots: 6 } });
    expect((await get("/v1/usage")).status).toBe(401);
  });
});

describe("pools, profiles and the OpenAPI document", () => {
  const pool: HarnessPool = createPool("tiny", makeSpec(), [
    makeSpec({ id: "sib-a", provenance: { direction: "recovery" } }),
  ]);

  it("creates a pool idempotently, refuses a different one under the same id, and lists it", async () => {
    expect((await post("/v1/pools", pool, key)).status).toBe(201);
    expect((await post("/v1/pools", pool, key)).status).toBe(201);
    const changed = createPool("tiny", makeSpec(), [makeSpec({ id: "sib-b", provenance: { direction: "recovery" } })]);
    const conflict = await post("/v1/pools", changed, key);
    expect(conflict.status).toBe(409);
    const list = await (await get("/v1/pools", key)).json();
    expect(list.pools.map((p: { id: string }) => p.id)).toContain("tiny");
    expect((await (await get("/v1/pools/tiny", key)).json()).version).toBe(pool.version);
    expect((await get("/v1/pools/none", key)).status).toBe(404);
  });

  it("rejects a pool whose version does not match its content", async () => {
    const res = await post("/v1/pools", { ...pool, id: "tampered", version: "0000" }, key);
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/does not match its content/);
  });

  it("queues reported outcomes as idempotent envelopes, after validating them", async () => {
    const { MemoryQueue } = await import("@harness-s/adapters/stores");
    const writer = await addKey(deps, "k-writer", ["profiles:write"]);
    const outcome = {
      id: "o-1",
      harnessId: inst.evolution.pool.siblings[0]!.id,
      family: "app",
      success: true,
      turns: 5,
      policyVersion: 2,
    };
    const res = await post("/v1/profiles/evidence", { poolId: inst.evolution.pool.id, outcomes: [outcome] }, writer);
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ queued: 1 });
    const sent = (deps.evidence as InstanceType<typeof MemoryQueue>).take();
    expect(sent).toEqual([
      expect.objectContaining({ v: 1, type: "profile.evidence", id: `${inst.evolution.pool.id}:o-1` }),
    ]);
    expect((await post("/v1/profiles/evidence", { poolId: "nope", outcomes: [outcome] }, writer)).status).toBe(404);
    const bad = await post(
      "/v1/profiles/evidence",
      { poolId: inst.evolution.pool.id, outcomes: [{ ...outcome, turns: -1 }] },
      writer,
    );
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.issues[0]).toMatch(/^outcomes\.0\.turns:/);
    expect(
      (await post("/v1/profiles/evidence", { poolId: inst.evolution.pool.id, outcomes: [outcome] }, key)).status,
    ).toBe(403);
  });

  it("serves profiles of a pool", async () => {
    const res = await get(`/v1/profiles?poolId=${inst.evolution.pool.id}`, key);
    const body = await res.json();
    expect(Object.keys(body.profiles)).toContain(inst.evolution.pool.siblings[0]!.id);
    expect((await get("/v1/profiles", key)).status).toBe(400);
  });

  it("publishes an OpenAPI document with the route schema", async () => {
    const doc = await (await get("/openapi.json")).json();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/v1/route"].post.requestBody.content["application/json"].schema.properties.task).toBeDefined();
  });
});
