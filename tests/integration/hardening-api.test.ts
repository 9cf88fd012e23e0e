import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { PutCommand, GetCommand } from "@aws-sdk/lib-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { NotConfiguredError, runEpisode, type Task } from "@harness-s/core";
import { singlePolicyEndpoint } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import { localCredentials } from "@harness-s/adapters/local";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startLocalStack, type LocalStack } from "@harness-s/functions/local";
import { addKey, seedPool, startApi } from "../api-factory.ts";

// Hostile and careless callers against the API on real stand-ins (DynamoDB Local, fauxqs), each
// case one defect of issue 11 that main had.
let stack: LocalStack;
let api: { url: string; close: () => Promise<void> };
let inst: SeedInstance;
let key: string;
let other: string;
let failRollouts = false;
/** Experiments on this stack wait here (a long run, as far as the API can tell) until the test ends. */
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));
const doc = () =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: stack.dynamoEndpoint, region: "us-east-1", credentials: localCredentials }),
  );

beforeAll(async () => {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  inst = await setup.instance(1);
  const byId = new Map([...inst.train, ...inst.heldout].map((t) => [t.id, t]));
  const policy = setup.createPolicy(1);
  const run = (t: Task, h: Parameters<typeof runEpisode>[1], s: number) => {
    if (failRollouts) throw new NotConfiguredError("no policy endpoint in this test");
    return runEpisode(t, h, s, { env: setup.env, policy });
  };
  stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async (id) => byId.get(id) },
    policies: singlePolicyEndpoint(run),
    visibilitySeconds: { profile: 1, dispatch: 1 },
    prepareExperiment: () => gate.then(() => Promise.reject(new Error("this stack runs no experiments"))),
    // One run at a time: the second waits queued behind the first (held at its gate), as the test needs.
    coordinatorConcurrency: 1,
  });
  await seedPool(stack.deps, inst.evolution.pool, inst.evolution.initialProfiles);
  const all = [
    "route",
    "rescues",
    "experiments",
    "pools:read",
    "pools:write",
    "profiles:read",
    "profiles:write",
  ] as const;
  key = await addKey(stack.deps, "k-a", [...all]);
  other = await addKey(stack.deps, "k-b", [...all]);
  api = await startApi(stack.deps);
}, 60_000);
afterAll(async () => {
  openGate();
  await api?.close();
  await stack?.stop();
});

const headers = (secret: string) => ({ "content-type": "application/json", authorization: `Bearer ${secret}` });
const post = (path: string, body: unknown, secret = key) =>
  fetch(`${api.url}${path}`, {
    method: "POST",
    headers: headers(secret),
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
const get = (path: string, secret = key) => fetch(`${api.url}${path}`, { headers: headers(secret) });
const until = async <T>(probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 100));
  }
};
const poolId = () => inst.evolution.pool.id;
const sibling = () => inst.evolution.pool.siblings[0]!.id;
const outcome = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  harnessId: sibling(),
  family: "app",
  success: true,
  turns: 3,
  policyVersion: 0,
  ...extra,
});
const route = () =>
  post("/v1/route", {
    poolId: poolId(),
    task: { id: "t1", family: "app", tags: ["app", "bulk"] },
    failureTags: ["incomplete-results"],
    k: 2,
  });
const storedProfile = async (harnessId: string) =>
  (await doc().send(new GetCommand({ TableName: stack.tables.Profiles, Key: { poolId: poolId(), harnessId } }))).Item;

describe("1. evidence cannot poison a pool", () => {
  it("counts a family called constructor and a behaviour called toString as plain names; profiles and routing keep answering", async () => {
    const res = await post("/v1/profiles/evidence", {
      poolId: poolId(),
      outcomes: [outcome("p1", { family: "constructor", behaviours: { toString: true, hasOwnProperty: false } })],
    });
    expect(res.status).toBe(202);
    const counted = await until(async () => {
      const item = await storedProfile(sibling());
      const p = item && JSON.parse(item.body as string);
      return p && Object.hasOwn(p.byFamily, "constructor") ? p : undefined;
    });
    expect(counted.byFamily.constructor).toEqual({ attempts: 1, successes: 1 });
    expect(counted.behaviours.toString).toEqual({ attempts: 1, successes: 1 });
    expect((await get(`/v1/profiles?poolId=${poolId()}`)).status).toBe(200);
    expect((await route()).status).toBe(200);
    expect(
      (
        await post("/v1/route", {
          poolId: poolId(),
          task: { id: "t2", family: "constructor", tags: ["toString"] },
          failureTags: ["valueOf"],
        })
      ).status,
    ).toBe(200);
  });

  it("refuses names that are not names (__proto__, empty, over-long, odd characters) and harnesses the pool does not have", async () => {
    for (const bad of [
      { family: "__proto__" },
      { family: "" },
      { family: "x".repeat(101) },
      { taskTags: ["a b"] },
      { behaviours: { __proto__x: true, "": true } },
      JSON.parse('{"behaviours": {"__proto__": true}}'),
      JSON.parse('{"behaviours": {"ok": true, "__proto__": false}}'),
      { harnessId: "sib-not-in-pool" },
    ]) {
      const res = await post("/v1/profiles/evidence", { poolId: poolId(), outcomes: [outcome("bad", bad)] });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    const nested = await post(
      "/v1/route",
      '{"poolId":"p","task":{"id":"t","family":"app","__proto__":{"tags":["x"]}}}',
    );
    expect(nested.status).toBe(400);
    expect((await nested.json()).error.issues[0]).toMatch(/task\.__proto__/);
  });

  it("keeps a profile bounded: thousands of distinct tags fold into one counted key, and later evidence is still applied", async () => {
    const h = inst.evolution.pool.siblings[1]!.id;
    const outcomes = Array.from({ length: 100 }, (_, i) =>
      outcome(`many-${i}`, {
        harnessId: h,
        taskTags: Array.from({ length: 50 }, (_, j) => `tag-${i}-${j}`),
        rescueOf: Array.from({ length: 50 }, (_, j) => `f-${i}-${j}`),
      }),
    );
    expect((await post("/v1/profiles/evidence", { poolId: poolId(), outcomes })).status).toBe(202);
    expect(
      (
        await post("/v1/profiles/evidence", {
          poolId: poolId(),
          outcomes: [outcome("after-many", { harnessId: h, family: "late" })],
        })
      ).status,
    ).toBe(202);
    const p = await until(async () => {
      const item = await storedProfile(h);
      const parsed = item && JSON.parse(item.body as string);
      return parsed?.byFamily?.late && parsed.turns.attempts >= 101
        ? { parsed, bytes: (item!.body as string).length }
        : undefined;
    }, 60_000);
    expect(Object.keys(p.parsed.byTaskTag).length).toBeLessThanOrEqual(129);
    expect(p.parsed.byTaskTag["~other"].attempts).toBeGreaterThan(4000);
    expect(p.parsed.folded).toBeGreaterThan(8000);
    expect(p.bytes).toBeLessThan(100_000);
  }, 90_000);

  it("repairs a profile an unguarded write left with null counts: reads answer 200, the next evidence writes it back valid", async () => {
    const h = inst.evolution.pool.siblings[2]!.id;
    const bad = {
      harnessId: h,
      policyVersion: 0,
      updatedAtStep: 0,
      byFamily: { app: { attempts: 2, successes: 1 }, constructor: { attempts: null, successes: null } },
      byTaskTag: {},
      byFailureTag: {},
      behaviours: { toString: { attempts: null, successes: 0 } },
      turns: { attempts: 2, successes: 6 },
    };
    await doc().send(
      new PutCommand({
        TableName: stack.tables.Profiles,
        Item: { poolId: poolId(), harnessId: h, policyVersion: 0, rev: 1, body: JSON.stringify(bad) },
      }),
    );
    const profiles = await get(`/v1/profiles?poolId=${poolId()}`);
    expect(profiles.status).toBe(200);
    expect((await profiles.json()).profiles[h].byFamily).toEqual({ app: { attempts: 2, successes: 1 } });
    expect((await route()).status).toBe(200);
    expect(
      (await post("/v1/profiles/evidence", { poolId: poolId(), outcomes: [outcome("repair-1", { harnessId: h })] }))
        .status,
    ).toBe(202);
    const fixed = await until(async () => {
      const item = await storedProfile(h);
      const p = item && JSON.parse(item.body as string);
      return p?.turns.attempts === 3 ? p : undefined;
    });
    expect(fixed.byFamily).toEqual({ app: { attempts: 3, successes: 2 } });
    expect(fixed.behaviours).toEqual({});
  });
});

/**
 * One request written to a raw socket: `head` (request line and headers), then each body piece
 * after its delay; answers the first status line the server sends and when it came.
 */
function rawRequest(url: string, head: string[], pieces: { afterMs: number; data: string }[] = [], timeoutMs = 15_000) {
  const { port } = new URL(url);
  return new Promise<{ status: number; ms: number; raw: string }>((resolve, reject) => {
    const started = performance.now();
    const socket = connect(Number(port), "127.0.0.1");
    let raw = "";
    const timers: ReturnType<typeof setTimeout>[] = [];
    const done = (err?: Error) => {
      for (const t of timers) clearTimeout(t);
      socket.destroy();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(raw.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ""));
      if (m) resolve({ status: Number(m[1]), ms: performance.now() - started, raw });
      else reject(err ?? new Error(`no answer (${JSON.stringify(raw.slice(0, 100))})`));
    };
    socket.on("data", (d) => {
      raw += d.toString();
      if (/^HTTP\/1\.1 (?!100)\d{3}[\s\S]*\r\n\r\n/.test(raw.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ""))) done();
    });
    socket.on("error", (err) => done(err));
    socket.on("close", () => done());
    socket.write(`${head.join("\r\n")}\r\n\r\n`);
    let at = 0;
    for (const p of pieces) {
      at += p.afterMs;
      timers.push(setTimeout(() => socket.write(p.data), at));
    }
    timers.push(setTimeout(() => done(new Error("timed out")), timeoutMs));
  });
}

describe("8. bodies: slow, short, expected, of the wrong type (issue 18)", () => {
  let strict: { url: string; close: () => Promise<void> };
  beforeAll(async () => {
    strict = await startApi({ ...stack.deps, bodyTimeouts: { idleMs: 1_000, deadlineMs: 3_000 } });
  });
  afterAll(() => strict?.close());
  const headOf = (length: number, extra: string[] = []) => [
    "POST /v1/route HTTP/1.1",
    "host: 127.0.0.1",
    `authorization: Bearer ${key}`,
    "content-type: application/json",
    `content-length: ${length}`,
    ...extra,
  ];

  it("answers 408 to a body that trickles past the deadline, stalls, or stops short of its Content-Length", async () => {
    const trickle = await rawRequest(
      strict.url,
      headOf(200),
      Array.from({ length: 40 }, () => ({ afterMs: 300, data: " " })),
    );
    expect(trickle.status).toBe(408);
    expect(trickle.ms).toBeLessThan(6_000);
    const stalled = await rawRequest(strict.url, headOf(200), [{ afterMs: 3_000, data: " " }]);
    expect(stalled.status).toBe(408);
    expect(stalled.raw).toMatch(/REQUEST_TIMEOUT/);
    const short = await rawRequest(strict.url, headOf(200), [{ afterMs: 0, data: '{"poolId":' }]);
    expect(short.status).toBe(408);
  });

  it("refuses Expect: 100-continue over the limit before any body is sent, and continues one within it", async () => {
    const huge = await rawRequest(strict.url, headOf(1e9, ["expect: 100-continue"]));
    expect(huge.status).toBe(413);
    expect(huge.raw).not.toMatch(/100 Continue/);
    const body = JSON.stringify({ poolId: poolId(), task: { id: "t1", family: "app" } });
    const small = await rawRequest(strict.url, headOf(Buffer.byteLength(body), ["expect: 100-continue"]), [
      { afterMs: 100, data: body },
    ]);
    expect(small.raw).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(small.status).toBe(200);
    const odd = await rawRequest(strict.url, headOf(2, ["expect: something-else"]), [{ afterMs: 0, data: "{}" }]);
    expect(odd.status).toBe(417);
  });

  it("reads JSON endpoints' bodies only when they are sent as JSON (415 otherwise)", async () => {
    const body = JSON.stringify({ poolId: poolId(), task: { id: "t1", family: "app" } });
    const send = (type?: string) =>
      fetch(`${api.url}/v1/route`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, ...(type ? { "content-type": type } : {}) },
        body,
      }).then(async (r) => ({
        status: r.status,
        code: (await r.json()).error?.code,
      }));
    expect(await send("text/plain")).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(await send("application/x-www-form-urlencoded")).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(await send("application/json; charset=latin1")).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    expect(
      (
        await rawRequest(
          api.url,
          ["POST /v1/route HTTP/1.1", "host: x", `authorization: Bearer ${key}`, `content-length: ${body.length}`],
          [{ afterMs: 0, data: body }],
        )
      ).status,
    ).toBe(415);
    expect((await send("application/json; charset=utf-8")).status).toBe(200);
    expect((await send("Application/JSON")).status).toBe(200);
  });
});

describe("2. experiments are bounded, budgeted, limited per key and cancellable", () => {
  it("refuses sizes past the limits and unknown or misspelt fields, naming them", async () => {
    const cases: [unknown, RegExp][] = [
      [{ train: { groupSize: 1_000_000 } }, /train\.groupSize/],
      [{ train: { steps: 1e9 }, seeds: Array.from({ length: 20 }, (_, i) => i) }, /train\.steps/],
      [{ train: { step: 3 } }, /train.*step/],
      [{ stepz: 3 }, /stepz/],
      [{ seeds: Array.from({ length: 21 }, (_, i) => i) }, /seeds/],
      [{ budget: { rollouts: 1e12 } }, /budget\.rollouts/],
      [{ arms: ["grpo", "grpo"] }, /arms/],
    ];
    for (const [body, issue] of cases) {
      const res = await post("/v1/experiments", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await res.json()).error.issues.join("\n")).toMatch(issue);
    }
  });

  it("gives every run a budget, lets a key hold two at once (429 for a third) and cancels a queued one, freeing its slot", async () => {
    const small = { seeds: [1], arms: ["grpo"], train: { steps: 1, batchSize: 2 } };
    const first = await (await post("/v1/experiments", small, other)).json();
    expect(first.budget).toEqual({ rollouts: 100_000 });
    await until(async () =>
      (await (await get(`/v1/experiments/${first.id}`, other)).json()).status === "running" ? true : undefined,
    );
    const second = await post("/v1/experiments", small, other);
    expect(second.status).toBe(202);
    const third = await post("/v1/experiments", small, other);
    expect(third.status).toBe(429);
    expect((await third.json()).error.code).toBe("CONCURRENCY_LIMIT");
    const { id } = await second.json();
    expect((await post(`/v1/experiments/${id}/cancel`, {}, key)).status).toBe(404);
    const cancelled = await (await post(`/v1/experiments/${id}/cancel`, {}, other)).json();
    expect(cancelled.status).toBe("cancelled");
    expect((await (await get(`/v1/experiments/${id}`, other)).json()).status).toBe("cancelled");
    expect((await post("/v1/experiments", small, other)).status).toBe(202);
    expect((await (await get("/v1/usage", other)).json()).activeExperiments).toBe(2);
  });
});

describe("6. quota and ownership", () => {
  it("lets exactly the quota through under 30 concurrent requests", async () => {
    const limited = await addKey(stack.deps, "k-quota", ["pools:read"], 5);
    const statuses = await Promise.all(
      Array.from({ length: 30 }, () => get("/v1/pools", limited).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25);
  });

  it("shows a decision and a rescue only to the key that made them", async () => {
    const decision = await (await route()).json();
    expect((await get(`/v1/decisions/${decision.id}`)).status).toBe(200);
    expect((await get(`/v1/decisions/${decision.id}`, other)).status).toBe(404);
    const task = inst.train[0]!;
    const rescue = await (
      await post("/v1/rescues", {
        poolId: poolId(),
        taskId: task.id,
        failureTags: ["incomplete-results"],
        k: 1,
        rolloutsPerHarness: 1,
      })
    ).json();
    expect((await get(`/v1/rescues/${rescue.id}`)).status).toBe(200);
    expect((await get(`/v1/rescues/${rescue.id}`, other)).status).toBe(404);
  });
});

describe("7. statuses a client can act on", () => {
  it("answers 400 (not 503) for ids past 2 KB and JSON nested thousands deep, and 413/414 for oversized bodies and URLs", async () => {
    const long = "p".repeat(2_100);
    for (const res of [
      await get(`/v1/pools/${long}`),
      await get(`/v1/profiles?poolId=${long}`),
      await get(`/v1/decisions/${long}`),
      await route().then(() => post("/v1/route", { poolId: long, task: { id: "t", family: "app" } })),
    ]) {
      expect(res.status).toBe(400);
      const body = await res.text();
      expect(body).not.toMatch(/ValidationException|DynamoDB|STORE_UNAVAILABLE/);
    }
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    const nested = await post("/v1/pools", `{"id":"p","version":"v","base":{},"siblings":[],"notes":{"x":${deep}}}`);
    expect(nested.status).toBe(400);
    expect((await nested.json()).error.issues[0]).toMatch(/nested deeper/);
    const big = await post("/v1/route", {
      poolId: "p",
      task: { id: "t", family: "app", instruction: "x".repeat(300_000) },
    });
    expect(big.status).toBe(413);
    expect((await get(`/v1/pools/${"q".repeat(5000)}`)).status).toBe(414);
  });

  it("ends a rescue `failed` once its rollouts have all gone to the DLQ", async () => {
    failRollouts = true;
    try {
      const task = inst.train[1]!;
      const rescue = await (
        await post("/v1/rescues", {
          poolId: poolId(),
          taskId: task.id,
          failureTags: ["incomplete-results"],
          k: 1,
          rolloutsPerHarness: 2,
        })
      ).json();
      const status = await until(async () => {
        const s = await (await get(`/v1/rescues/${rescue.id}`)).json();
        return s.status === "running" ? undefined : s;
      }, 30_000);
      expect(status.status).toBe("failed");
      expect(status.failed.map((f: { index: number }) => f.index)).toEqual([0, 1]);
      expect(status.failed[0].reason).toMatch(/no policy endpoint/);
    } finally {
      failRollouts = false;
    }
  }, 40_000);

  // Last in the file: the server ends this connection mid-body, so no later request reuses it.
  it("counts a chunked body (no Content-Length) as it arrives and cuts it at the limit", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 2000) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const chunked = await fetch(`${api.url}/v1/route`, {
      method: "POST",
      headers: headers(key),
      body: stream,
      duplex: "half",
    } as RequestInit).catch((err: Error) => err);
    if (!(chunked instanceof Error)) expect(chunked.status).toBe(413);
    // 128 MB offered: the server stopped reading long before the end (a few chunks past 256 KiB).
    expect(sent).toBeLessThan(2000);
  });
});
