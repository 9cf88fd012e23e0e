import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import parsePrometheus, { type ParsedFamily } from "parse-prometheus-text-format";
import type { SeedInstance } from "@harness-s/core/experiment";
import { jsonLinesLogger } from "@harness-s/core/observability";
import { TextEnvironment, defaultEmbeddedSettings, embeddedCallerTask, embeddedSetup } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";
import { startHostilePolicy } from "../hostile-policy.ts";

// Issue 58, acceptance: one failed rollout traced by its correlation id from the API's log line
// through the dispatch queue to the dispatch worker's line, on the local stack (DynamoDB Local,
// fauxqs, the dispatch worker polling it) with its JSON lines captured; the caller's policy
// endpoint answers every sample with a 500 that echoes the request's headers (its secret among
// them), so each slot fails at once. No line holds the key's secret or the endpoint's. And
// /metrics (admin only) parses as Prometheus text, its counters moving with that traffic.
const ENDPOINT_SECRET = "Bearer endpoint-secret-5d1c9e7a3f";
const SLOTS = 2;
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let policy: Awaited<ReturnType<typeof startHostilePolicy>>;
const keys: Record<string, string> = {};
const lines: string[] = [];

beforeAll(async () => {
  inst = await setup.instance(1);
  policy = await startHostilePolicy(() => ({ echoHeaders: 500 }));
  const byId = new Map(inst.train.map((t) => [t.id, t]));
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst, {
    builtinEnvironments: { embedded: new TextEnvironment(setup.env) },
    tasks: { get: async (id) => byId.get(id) },
    logger: jsonLinesLogger({ out: (l) => lines.push(l) }),
    metrics: true,
  });
  api = await startApi(stack.deps);
  keys.caller = await addKey(stack.deps, "k-caller", ["rescues"]);
  keys.admin = await addKey(stack.deps, "k-admin", ["admin"]);
  const res = await call("caller", "POST", "/v1/policy-endpoints", {
    id: "mine",
    kind: "protocol-v2",
    url: policy.url,
    policy: "fails",
    secretHeader: { name: "authorization", value: ENDPOINT_SECRET },
  });
  expect(res.status, await res.clone().text()).toBe(201);
}, 180_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await policy?.close();
}, 60_000);

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${keys[key]}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** A rescue of SLOTS slots at the failing endpoint, followed until it is no longer running. */
async function failedRescue(): Promise<{
  id: string;
  correlationId: string;
  status: { status: string; failed: { index: number; code: string }[] };
}> {
  const res = await call("caller", "POST", "/v1/rescues", {
    poolId: inst.evolution.pool.id,
    harnesses: [inst.evolution.pool.base.id],
    rolloutsPerHarness: SLOTS,
    caller: {
      endpoint: "mine",
      environment: { kind: "builtin", id: "embedded" },
      task: embeddedCallerTask(setup.env, inst.train[0]!),
      maxTokens: 8,
    },
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const correlationId = res.headers.get("x-request-id")!;
  const { id } = (await res.json()) as { id: string };
  let status = await (await call("caller", "GET", `/v1/rescues/${id}`)).json();
  for (let i = 0; i < 6 && status.status === "running"; i++)
    status = await (await call("caller", "GET", `/v1/rescues/${id}?wait=20&seen=${status.failed.length}`)).json();
  return { id, correlationId, status };
}

/** `/metrics` as an admin reads it: the text, and its families by name. */
async function scrape(): Promise<{ text: string; families: Map<string, ParsedFamily> }> {
  const res = await call("admin", "GET", "/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, families: new Map(parsePrometheus(text).map((f) => [f.name, f])) };
}

/** A counter's or gauge's value for the labels given (0 when the series is not there yet). */
function sampleValue(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number {
  const series = families.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return Number(series?.value ?? 0);
}

/** A labelled histogram's `_count` (the parser folds labelled histograms' series: read from the text). */
const countOf = (text: string, name: string, route: string) =>
  Number(new RegExp(`^${name}_count\\{route="${route}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);

const events = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe("a failed rollout, traced", () => {
  it("carries the API request's correlation id through the dispatch queue to the worker's line of each failed slot, with its key and job; no secret in any line", async () => {
    const { id, correlationId, status } = await failedRescue();
    expect(status).toMatchObject({ status: "failed", failed: [{ index: 0 }, { index: 1 }] });
    expect(correlationId).toMatch(/^[0-9a-f]{32}$/);
    const request = events().filter((e) => e.event === "http.request" && e.correlationId === correlationId);
    expect(request).toEqual([
      expect.objectContaining({ keyId: "k-caller", method: "POST", route: "/v1/rescues", status: 202 }),
    ]);
    const slots = events().filter((e) => e.event === "queue.record" && e.function === "dispatch" && e.jobId === id);
    expect(slots).toHaveLength(SLOTS);
    for (const slot of slots)
      expect(slot).toMatchObject({
        correlationId,
        keyId: "k-caller",
        jobId: id,
        type: "rollout.requested",
        outcome: "failed",
        errorCode: status.failed[0]!.code,
        rescueSlots: SLOTS,
      });
    expect(slots.map((s) => s.slot).sort()).toEqual([0, 1]);
    // The status reads the caller made while it waited are lines of their own, under ids of their own.
    expect(
      events()
        .filter((e) => e.route === "/v1/rescues/:id")
        .every((e) => e.correlationId !== correlationId),
    ).toBe(true);
    const all = lines.join("\n");
    expect(all).not.toContain(keys.caller);
    expect(all).not.toContain(keys.admin);
    expect(all).not.toContain("endpoint-secret-5d1c9e7a3f");
    // The endpoint did see the secret (it echoed it back): the masking is what kept it out.
    expect(policy.requests.some((r) => JSON.stringify(r.headers).includes("endpoint-secret-5d1c9e7a3f"))).toBe(true);
  }, 120_000);
});

describe("GET /metrics under the local stack", () => {
  it("is for admin keys only", async () => {
    expect((await fetch(`${api.url}/metrics`)).status).toBe(401);
    expect((await call("caller", "GET", "/metrics")).status).toBe(403);
  });

  it("parses as Prometheus text, and its counters move with a failed rescue's traffic", async () => {
    const before = await scrape();
    for (const queue of ["dispatch", "dispatch-dlq", "profile", "vote", "coordinator", "coordinator-dlq"])
      expect(
        before.families
          .get("harness_s_queue_messages")
          ?.metrics.some((m) => m.labels?.queue === queue && m.labels.state === "visible"),
      ).toBe(true);
    await failedRescue();
    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) =>
      sampleValue(after.families, name, labels) - sampleValue(before.families, name, labels);
    expect(moved("harness_s_http_requests_total", { route: "/v1/rescues", method: "POST", status: "202" })).toBe(1);
    expect(moved("harness_s_http_requests_total", { route: "/metrics", method: "GET", status: "200" })).toBe(1);
    expect(moved("harness_s_rescues_started_total")).toBe(1);
    expect(moved("harness_s_queue_records_total", { function: "dispatch", outcome: "failed" })).toBe(SLOTS);
    expect(moved("harness_s_rescues_finished_total", { outcome: "failed" })).toBe(1);
    expect(moved("harness_s_rollouts_stored_total")).toBe(0);
    expect(
      countOf(after.text, "harness_s_http_request_duration_seconds", "/v1/rescues") -
        countOf(before.text, "harness_s_http_request_duration_seconds", "/v1/rescues"),
    ).toBe(1);
    expect(sampleValue(after.families, "harness_s_queue_messages", { queue: "dispatch", state: "visible" })).toBe(0);
  }, 120_000);
});
