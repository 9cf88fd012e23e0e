import { describe, expect, it } from "vitest";
import { createPool } from "@harness-s/core";
import { newApiKey, type Scope } from "@harness-s/core/access";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { makeSpec, makeTask } from "../factories.ts";

// Issue 67 items 0 and 10: everything a key's request creates is that key's: another key gets a
// 404 for it and does not see it listed. One row per record kind a request creates; each row
// creates through the API as key A and reads as key B.

const ALL: Scope[] = [
  "route",
  "rescues",
  "experiments",
  "pools:read",
  "pools:write",
  "profiles:read",
  "profiles:write",
];
const sharedPool = createPool("shared", makeSpec({ id: "h0" }), [
  makeSpec({ id: "sib-a", provenance: { direction: "recovery" } }),
]);

async function setup() {
  const task = makeTask({ id: "t1" });
  const deps = memoryApiDeps({ tasks: { get: async (id) => (id === task.id ? task : undefined) } });
  await deps.pools.put(sharedPool);
  const secrets: Record<string, string> = {};
  for (const [id, scopes] of [
    ["a", ALL],
    ["b", ALL],
    ["admin", ["admin"]],
  ] as [string, Scope[]][]) {
    const { secret, record } = newApiKey(id, scopes);
    await deps.keys.put(record);
    secrets[id] = secret;
  }
  const app = createApp(deps);
  const call = async (who: string, method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: {
        authorization: `Bearer ${secrets[who]}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { deps, call };
}

type Row = {
  kind: string;
  create: (s: Awaited<ReturnType<typeof setup>>) => Promise<string>;
  read: (id: string) => string;
  list?: string;
};
const ownPool = createPool("acme-pool", makeSpec({ id: "h0" }), [
  makeSpec({ id: "sib-b", provenance: { direction: "recon" } }),
]);
const ROWS: Row[] = [
  {
    kind: "a pool a key registers (pools:write)",
    create: async ({ call }) => {
      const r = await call("a", "POST", "/v1/pools", ownPool);
      expect(r.status).toBe(201);
      return ownPool.id;
    },
    read: (id) => `/v1/pools/${id}`,
    list: "/v1/pools",
  },
  {
    kind: "a routing decision",
    create: async ({ call }) => {
      const r = await call("a", "POST", "/v1/route", {
        poolId: "shared",
        task: { id: "t1", family: "app" },
        failureTags: ["incomplete-results"],
        k: 1,
      });
      expect(r.status).toBe(200);
      return r.body.id as string;
    },
    read: (id) => `/v1/decisions/${id}`,
  },
  {
    kind: "an experiment",
    create: async ({ call }) => {
      const r = await call("a", "POST", "/v1/experiments", { seeds: [1], arms: ["grpo"], budget: { rollouts: 10 } });
      expect(r.status).toBe(202);
      return r.body.id as string;
    },
    read: (id) => `/v1/experiments/${id}`,
    list: "/v1/experiments",
  },
  {
    kind: "a rescue",
    create: async ({ call }) => {
      const r = await call("a", "POST", "/v1/rescues", {
        poolId: "shared",
        taskId: "t1",
        failureTags: ["incomplete-results"],
        k: 1,
        rolloutsPerHarness: 1,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      return r.body.id as string;
    },
    read: (id) => `/v1/rescues/${id}`,
    list: "/v1/rescues",
  },
];

describe("what a key's request creates is that key's", () => {
  for (const row of ROWS)
    it(`${row.kind}: another key gets a 404 and does not see it listed; its own key and an admin read it`, async () => {
      const s = await setup();
      const id = await row.create(s);
      expect((await s.call("b", "GET", row.read(id))).status).toBe(404);
      expect((await s.call("a", "GET", row.read(id))).status).toBe(200);
      expect((await s.call("admin", "GET", row.read(id))).status).toBe(200);
      if (row.list) expect(JSON.stringify((await s.call("b", "GET", row.list)).body)).not.toContain(id);
    });

  it("a shared pool (none owns it) stays every key's; a key can neither take it nor hide it by putting it again as its own", async () => {
    const s = await setup();
    expect((await s.call("b", "GET", "/v1/pools/shared")).status).toBe(200);
    const taken = await s.call("a", "POST", "/v1/pools", sharedPool);
    expect([taken.status, (taken.body.error as { code: string }).code]).toEqual([409, "CONFLICT"]);
    expect((await s.call("b", "GET", "/v1/pools/shared")).status).toBe(200);
  });

  it("ids the service mints are refused for a registered pool (a pev_ id would squat an evolution's pool)", async () => {
    const s = await setup();
    for (const id of ["pev_7", "exp_1/pool/3", "rsc_dec_1", "dec_2", "key_3"]) {
      const r = await s.call("a", "POST", "/v1/pools", { ...ownPool, id });
      expect([id, r.status, JSON.stringify(r.body)]).toEqual([id, 400, expect.stringContaining("the service's own")]);
    }
    expect((await s.deps.pools.list()).map((p) => p.id)).toEqual(["shared"]);
  });
});
