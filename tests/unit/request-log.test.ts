import { describe, expect, it } from "vitest";
import { MemoryQueue } from "@harness-s/adapters/stores";
import { createPool } from "@harness-s/core";
import { newApiKey, type Scope } from "@harness-s/core/access";
import { MetricRegistry, PROMETHEUS_CONTENT_TYPE, jsonLinesLogger } from "@harness-s/core/observability";
import { createApp } from "../../functions/api/app.ts";
import type { ApiDeps } from "../../functions/api/deps.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";
import { makeSpec } from "../factories.ts";

// Issue 58, items 2 and 4: every request runs under a correlation id (taken from a valid header or
// minted), named in x-request-id, stamped on every message it queues, and told in one JSON line when
// it ends (key id, never the secret; the route's pattern, never the path sent); /metrics is served
// to admin keys only, and only where the deps provide metrics.
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

async function setup(over: Partial<ApiDeps> = {}) {
  const lines: string[] = [];
  const evidence = new MemoryQueue();
  const deps = memoryApiDeps({
    evidence,
    observability: { events: jsonLinesLogger({ out: (l) => lines.push(l) }) },
    ...over,
  });
  await deps.pools.put(
    createPool("p1", makeSpec({ id: "h0" }), [makeSpec({ id: "h1", provenance: { direction: "recon" } })]),
  );
  const keys: Record<string, string> = {};
  for (const [id, scopes] of [
    ["writer", ["profiles:write"]],
    ["admin", ["admin"]],
  ] as [string, Scope[]][]) {
    const { secret, record } = newApiKey(id, scopes);
    await deps.keys.put(record);
    keys[id] = secret;
  }
  const app = createApp(deps);
  const call = (path: string, secret?: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    app.request(path, {
      ...init,
      headers: {
        ...(secret ? { authorization: `Bearer ${secret}` } : {}),
        "content-type": "application/json",
        ...init.headers,
      },
    });
  return { lines, evidence, keys, call };
}

const report = {
  poolId: "p1",
  outcomes: [{ id: "o-1", harnessId: "h1", family: "app", success: true, turns: 3, policyVersion: 0 }],
};

describe("a request's correlation id and its log line", () => {
  it("is minted, answered in x-request-id, stamped on what it queues, and told in one line with the key id and route pattern", async () => {
    const { lines, evidence, keys, call } = await setup();
    const res = await call("/v1/profiles/evidence", keys.writer, { method: "POST", body: JSON.stringify(report) });
    expect(res.status).toBe(202);
    const id = res.headers.get("x-request-id")!;
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(evidence.take().map((m) => m.correlationId)).toEqual([id]);
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({
        event: "http.request",
        level: "info",
        correlationId: id,
        keyId: "writer",
        method: "POST",
        route: "/v1/profiles/evidence",
        status: 202,
      }),
    ]);
    expect(JSON.parse(lines[0]!).ms).toBeGreaterThanOrEqual(0);
  });

  it("is a valid traceparent's trace id or x-request-id; a hostile header is never echoed or logged", async () => {
    const { lines, keys, call } = await setup();
    const traced = await call("/v1/profiles/evidence", keys.writer, {
      method: "POST",
      body: JSON.stringify(report),
      headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` },
    });
    expect(traced.headers.get("x-request-id")).toBe(TRACE);
    const named = await call("/v1/rescues/rsc_x", keys.writer, { headers: { "x-request-id": "client-req-0001" } });
    expect(named.headers.get("x-request-id")).toBe("client-req-0001");
    const hostile = 'x"}\\u000a{"event":"forged","level":"error"';
    const refused = await call("/v1/rescues/rsc_x", keys.writer, { headers: { "x-request-id": hostile } });
    expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(lines.join("\n")).not.toContain("forged");
    expect(lines.map((l) => JSON.parse(l).correlationId)).toEqual([
      TRACE,
      "client-req-0001",
      refused.headers.get("x-request-id"),
    ]);
  });

  it("names the route's pattern and the error code answered; a refused or unknown request gets its id and line too; no secret is ever in a line", async () => {
    const { lines, keys, call } = await setup();
    const forbidden = await call("/v1/rescues/rsc_secret-path", keys.writer);
    const unknownKey = await call("/v1/models", "hs_notakeyatallbutlookslikeone123");
    const noRoute = await call(`/v1/nothing/${keys.writer}`, keys.writer);
    for (const res of [forbidden, unknownKey, noRoute])
      expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      // A key refused its scope is named by its id (the error carries it; the answer does not).
      expect.objectContaining({ keyId: "writer", route: "/v1/rescues/:id", status: 403, errorCode: "FORBIDDEN" }),
      expect.objectContaining({ route: "/v1/models", status: 401, errorCode: "UNAUTHENTICATED" }),
      expect.objectContaining({ route: "unmatched", status: 404, errorCode: "NOT_FOUND" }),
    ]);
    const all = lines.join("\n");
    for (const secret of [...Object.values(keys), "hs_notakeyatallbutlookslikeone123", "rsc_secret-path"])
      expect(all).not.toContain(secret);
  });
});

describe("GET /metrics", () => {
  it("is not served where the deps provide no metrics", async () => {
    const { keys, call } = await setup();
    expect((await call("/metrics", keys.admin)).status).toBe(404);
  });

  it("is served to admin keys only, in the Prometheus text format", async () => {
    const registry = new MetricRegistry();
    registry.counter("t_total", "A count").inc();
    const { keys, call } = await setup({
      observability: { metrics: { exposition: async () => registry.exposition() } },
    });
    expect((await call("/metrics")).status).toBe(401);
    expect((await call("/metrics", keys.writer)).status).toBe(403);
    const res = await call("/metrics", keys.admin);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(PROMETHEUS_CONTENT_TYPE);
    expect(await res.text()).toBe("# HELP t_total A count\n# TYPE t_total counter\nt_total 1\n");
  });
});
