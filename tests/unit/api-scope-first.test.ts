import { describe, expect, it } from "vitest";
import { MemoryQueue, MemoryUsageMeter } from "@harness-s/adapters/stores";
import { newApiKey, type Scope } from "@harness-s/core/access";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { openApiDocument } from "../../functions/api/openapi.ts";

// Issue 53 item 6: each router checks its scope as middleware, before a body is read or any work
// is done; a request refused there is neither metered nor queued. A request that fails after it
// (a bad body) is metered, as before.

type Operation = { operationId: string; requestBody?: unknown };
const bodyRoutes = Object.entries(openApiDocument().paths as Record<string, Record<string, Operation>>).flatMap(
  ([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => op.requestBody)
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        url: path.replace(/\{\w+\}/g, "x"),
        id: op.operationId,
      })),
);

/** A body that never arrives, and says whether anyone tried to read it. */
function stalledBody() {
  const seen = { read: false };
  const pull = () => {
    seen.read = true;
    return new Promise<void>(() => undefined);
  };
  const body = new ReadableStream<Uint8Array>({ pull }, { highWaterMark: 0 });
  return { body, seen };
}

async function setup() {
  const meter = new MemoryUsageMeter();
  const queues = { dispatch: new MemoryQueue(), coordinator: new MemoryQueue(), evidence: new MemoryQueue() };
  const deps = memoryApiDeps({ meter, ...queues, bodyTimeouts: { idleMs: 300, deadlineMs: 600 } });
  const keys: Record<string, string> = {};
  for (const [id, scopes] of [
    ["none", []],
    ["all", ["admin"]],
  ] as [string, Scope[]][]) {
    const { secret, record } = newApiKey(id, scopes);
    await deps.keys.put(record);
    keys[id] = secret;
  }
  const app = createApp(deps);
  const send = (route: (typeof bodyRoutes)[number], secret: string, body: BodyInit) =>
    app.request(route.url, {
      method: route.method,
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
  const queued = () => Object.values(queues).flatMap((q) => q.take());
  return { meter, keys, send, queued, deps };
}

describe("the scope is checked as middleware, before the body", () => {
  it("reads bodies on at least the eight routes that take one", () => {
    expect(bodyRoutes.length).toBeGreaterThanOrEqual(8);
  });

  it("answers 403 to a key without the scope on every route with a body, without reading it; nothing is metered or queued", async () => {
    const { meter, keys, send, queued } = await setup();
    const answers: string[] = [];
    for (const route of bodyRoutes.filter((r) => r.id !== "quote")) {
      const { body, seen } = stalledBody();
      const res = await send(route, keys.none!, body);
      answers.push(`${route.id} ${res.status} ${(await res.json()).error.code} read=${seen.read}`);
    }
    expect(answers).toEqual(bodyRoutes.filter((r) => r.id !== "quote").map((r) => `${r.id} 403 FORBIDDEN read=false`));
    expect((await meter.get("none")).requests).toBe(0);
    expect(queued()).toEqual([]);
  });

  it("a quote, whose scope its body names, answers 401 to an unknown key before reading the body, and 403 after it to a key without the scope, unmetered", async () => {
    const { meter, send } = await setup();
    const quote = bodyRoutes.find((r) => r.id === "quote")!;
    const { body, seen } = stalledBody();
    const unknown = await send(quote, "hs_not-a-key", body);
    expect([unknown.status, seen.read]).toEqual([401, false]);
    const { keys, send: sendKnown } = await setup();
    const refused = await sendKnown(
      quote,
      keys.none!,
      JSON.stringify({ rescue: { poolId: "p", taskId: "t", failureTags: ["x"] } }),
    );
    expect([refused.status, (await refused.json()).error.message]).toEqual([
      403,
      "this API key lacks the scope rescues",
    ]);
    expect((await meter.get("none")).requests).toBe(0);
  });

  it("a request with the scope whose body is refused is still metered, once", async () => {
    const { meter, keys, send, queued } = await setup();
    const routes = bodyRoutes.filter((r) => r.id !== "quote");
    for (const route of routes)
      expect((await send(route, keys.all!, "[]")).status, route.id).toBeGreaterThanOrEqual(400);
    expect((await meter.get("all")).requests).toBe(routes.length);
    expect(queued()).toEqual([]);
  });
});
