import { describe, expect, it } from "vitest";
import parsePrometheus from "parse-prometheus-text-format";
import { Envelope, envelope } from "@harness-s/core/messaging";
import {
  CorrelationId,
  MetricRegistry,
  correlationIdOf,
  currentCorrelationId,
  eventLine,
  jsonLinesLogger,
  mintCorrelationId,
  traceIdOf,
  withCorrelationId,
  type LogEvent,
} from "@harness-s/core/observability";
import { UpstreamRejectedError } from "@harness-s/core/gateway";
import { rolloutRunners, type CallerPolicies } from "@harness-s/core/dispatch";
import { MemoryQueue, MemoryRescueJobStore, MemoryRolloutStore } from "@harness-s/adapters/stores";
import { createSqsWorker } from "../../functions/sqs-worker.ts";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { callerSlotSource, makeSqsEvent } from "../factories.ts";

// Issue 58, items 2 and 4: the correlation id (minted or taken from a valid header, carried by
// every envelope made on its behalf), the JSON lines (one line, secrets masked, bounded), and the
// Prometheus text the metrics are written in.
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

describe("a request's correlation id", () => {
  it("is a valid traceparent's trace id, else a valid x-request-id, else a fresh one", () => {
    expect(correlationIdOf({ traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, requestId: "req-12345678" })).toBe(TRACE);
    expect(correlationIdOf({ requestId: "req-12345678" })).toBe("req-12345678");
    expect(correlationIdOf({})).toMatch(/^[0-9a-f]{32}$/);
    expect(mintCorrelationId()).not.toBe(mintCorrelationId());
  });

  it("never takes a header that is not valid: it mints one instead", () => {
    const hostile = [
      'abc"}\n{"level":"error","event":"forged"',
      "short",
      "x".repeat(129),
      "id with spaces",
      "ünïcode-12345678",
      "-starts-with-dash",
      "\u2028line-separator-id",
    ];
    for (const requestId of hostile) {
      const id = correlationIdOf({ requestId });
      expect(id).not.toBe(requestId);
      expect(id).toMatch(/^[0-9a-f]{32}$/);
    }
    for (const traceparent of [
      `ff-${TRACE}-00f067aa0ba902b7-01`,
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${TRACE}-${"0".repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-00f067aa0ba902b7-01`,
      `00-${TRACE}-00f067aa0ba902b7-01-extra`,
      `00-${TRACE}-00f067aa0ba902b7`,
      `01-${TRACE}-00f067aa0ba902b7-01-${"x".repeat(600)}`,
    ])
      expect(traceIdOf(traceparent)).toBeUndefined();
    // A later version may append fields.
    expect(traceIdOf(`01-${TRACE}-00f067aa0ba902b7-01-future`)).toBe(TRACE);
  });
});

describe("the envelope's correlation id", () => {
  const body = { experimentId: "exp_1" };
  it("is optional: a message sent before it existed still parses, and one with it keeps it", () => {
    expect(Envelope.parse({ v: 1, id: "experiment:exp_1", type: "experiment.requested", body })).not.toHaveProperty(
      "correlationId",
    );
    expect(
      Envelope.parse({ v: 1, id: "experiment:exp_1", type: "experiment.requested", body, correlationId: TRACE })
        .correlationId,
    ).toBe(TRACE);
    expect(
      Envelope.safeParse({
        v: 1,
        id: "experiment:exp_1",
        type: "experiment.requested",
        body,
        correlationId: "bad id\n",
      }).success,
    ).toBe(false);
  });

  it("is the id of the work the envelope is made in, each concurrent scope its own", async () => {
    expect(envelope("experiment.requested", "e", body)).not.toHaveProperty("correlationId");
    const made = await Promise.all(
      ["corr-aaaaaaaa", "corr-bbbbbbbb"].map((id) =>
        withCorrelationId(id, async () => {
          await new Promise((r) => setTimeout(r, id.endsWith("a") ? 20 : 5));
          return envelope("experiment.requested", id, body);
        }),
      ),
    );
    expect(made.map((e) => e.correlationId)).toEqual(["corr-aaaaaaaa", "corr-bbbbbbbb"]);
    expect(currentCorrelationId()).toBeUndefined();
  });
});

describe("a JSON log line", () => {
  it("is one line of JSON with the ambient id, secrets masked and strings bounded", () => {
    const line = withCorrelationId("corr-12345678", () =>
      eventLine(
        {
          event: "http.request",
          keyId: "k1",
          secret: "hs_abcdefghijklmnopqrstuvwxyz",
          reason: "upstream said: Authorization: Bearer sk-live-123 and hs_AAAAAAAAAAAAAAAAAAAAAAAA\nnext\u2028line",
          long: "y".repeat(5_000),
        },
        0,
      ),
    );
    expect(line.split(/\r|\n|\u2028|\u2029/)).toHaveLength(1);
    const parsed = JSON.parse(line);
    expect(parsed).toMatchObject({
      at: "1970-01-01T00:00:00.000Z",
      level: "info",
      event: "http.request",
      correlationId: "corr-12345678",
      keyId: "k1",
      secret: "[redacted]",
    });
    expect(line).not.toContain("sk-live-123");
    expect(line).not.toContain("hs_AAAA");
    expect(parsed.reason).toContain("next\u2028line");
    expect(parsed.long.length).toBeLessThanOrEqual(2_001);
  });

  it("goes to the error sink for warnings and errors", () => {
    const out: string[] = [];
    const err: string[] = [];
    const logger = jsonLinesLogger({ out: (l) => out.push(l), err: (l) => err.push(l) });
    logger.event({ event: "a" });
    logger.event({ event: "b", level: "warn" });
    logger.event({ event: "c", level: "error" });
    expect(out.map((l) => JSON.parse(l).event)).toEqual(["a"]);
    expect(err.map((l) => JSON.parse(l).event)).toEqual(["b", "c"]);
  });
});

describe("the Prometheus text", () => {
  it("parses: counters, gauges and histograms, label values escaped", () => {
    const registry = new MetricRegistry();
    const requests = registry.counter("t_requests_total", "Requests\nby route", ["route", "status"]);
    const depth = registry.gauge("t_depth", "Depth", ["queue"]);
    const latency = registry.histogram("t_latency_seconds", "Latency", [], [0.1, 1]);
    const byRoute = registry.histogram("t_route_seconds", "Latency by route", ["route"], [0.1, 1]);
    requests.inc({ route: '/a"b\\c\nd', status: "200" });
    requests.inc({ route: '/a"b\\c\nd', status: "200" }, 2);
    depth.set({ queue: "dispatch" }, 7);
    for (const s of [0.05, 0.5, 5]) latency.observe({}, s);
    byRoute.observe({ route: "/r" }, 0.5);
    const text = registry.exposition();
    const families = parsePrometheus(text);
    expect(families.map((f) => [f.name, f.type])).toEqual([
      ["t_requests_total", "COUNTER"],
      ["t_depth", "GAUGE"],
      ["t_latency_seconds", "HISTOGRAM"],
      ["t_route_seconds", "HISTOGRAM"],
    ]);
    expect(families[0]!.metrics[0]).toEqual({ labels: { route: '/a"b\\c\nd', status: "200" }, value: "3" });
    expect(families[1]!.metrics[0]).toEqual({ labels: { queue: "dispatch" }, value: "7" });
    expect(families[2]!.metrics[0]).toEqual({
      buckets: { "0.1": "1", "1": "2", "+Inf": "3" },
      count: "3",
      sum: "5.55",
    });
    // The parser folds a labelled histogram's series into one (it keeps only the buckets): its lines are read as they
    // are.
    expect(text).toContain(
      't_route_seconds_bucket{route="/r",le="0.1"} 0\nt_route_seconds_bucket{route="/r",le="1"} 1\nt_route_seconds_bucket{route="/r",le="+Inf"} 1\n',
    );
    expect(text).toContain('t_route_seconds_count{route="/r"} 1\n');
  });
});

describe("a worker's record", () => {
  it("runs under its envelope's id, so a message it sends carries it on; a message without one gets a fresh id", async () => {
    const out = new MemoryQueue();
    const events: LogEvent[] = [];
    const handler = createSqsWorker(
      "coordinator",
      "experiment.requested",
      async (body, id) => {
        await out.send([envelope("experiment.requested", `${id}:next`, body, { keyId: "k1" })]);
        return "sent";
      },
      { logger: { event: (e) => void events.push(e) } },
    );
    const carried = {
      ...envelope("experiment.requested", "e1", { experimentId: "exp_1" }, { keyId: "k1", jobId: "exp_1" }),
      correlationId: "corr-12345678",
    };
    await handler(makeSqsEvent([carried, envelope("experiment.requested", "e2", { experimentId: "exp_2" })]));
    const sent = out.take();
    expect(sent.find((m) => m.id === "e1:next")?.correlationId).toBe("corr-12345678");
    const fresh = sent.find((m) => m.id === "e2:next")?.correlationId;
    expect(fresh).toMatch(/^[0-9a-f]{32}$/);
    expect(events).toEqual([
      expect.objectContaining({
        event: "queue.record",
        function: "coordinator",
        type: "experiment.requested",
        envelopeId: "e1",
        correlationId: "corr-12345678",
        keyId: "k1",
        jobId: "exp_1",
        outcome: "sent",
      }),
      expect.objectContaining({ event: "queue.record", envelopeId: "e2", correlationId: fresh, outcome: "sent" }),
    ]);
    expect(CorrelationId.safeParse(fresh).success).toBe(true);
  });

  it("of a caller slot failed at once names its code, its reason, its rescue's slots and its correlation id", async () => {
    const jobs = new MemoryRescueJobStore();
    const caller = callerSlotSource;
    await jobs.create({
      id: "rsc_1",
      poolId: "p",
      taskId: "t1",
      decisionId: "d",
      chosen: ["h0"],
      rolloutsPerHarness: 2,
      expected: 2,
      createdAt: 0,
      keyId: "k-a",
      caller,
    });
    const callers: CallerPolicies = {
      checkEnvironment: async () => undefined,
      checkEndpoint: async () => undefined,
      currentVersion: async () => 0,
      datums: async () => [],
      runner: () => Promise.reject(new UpstreamRejectedError("no", 400)),
    };
    const events: LogEvent[] = [];
    const handler = createDispatchHandler({
      pools: {
        get: async () => ({ id: "p", base: { id: "h0" } }) as never,
        put: async () => undefined,
        list: async () => [],
      },
      tasks: { get: async () => undefined },
      rollouts: new MemoryRolloutStore(),
      runners: rolloutRunners({ caller: callers }),
      jobs,
      logger: { event: (e) => void events.push(e) },
    });
    const body = {
      jobId: "rsc_1",
      index: 1,
      poolId: "p",
      harnessId: "h0",
      taskId: "t1",
      seed: 1,
      source: { kind: "caller" as const, ...caller },
      rescueJob: true as const,
    };
    const message = {
      ...envelope("rollout.requested", "rsc_1:1", body, { keyId: "k-a", jobId: "rsc_1" }),
      correlationId: "corr-12345678",
    };
    expect(await handler(makeSqsEvent([message]))).toEqual({ batchItemFailures: [] });
    expect((await jobs.get("rsc_1"))!.failures?.[0]).toMatchObject({ index: 1 });
    expect(events).toEqual([
      expect.objectContaining({
        event: "queue.record",
        function: "dispatch",
        correlationId: "corr-12345678",
        keyId: "k-a",
        jobId: "rsc_1",
        slot: 1,
        rescueSlots: 2,
        outcome: "failed",
        errorCode: (await jobs.get("rsc_1"))!.failures![0]!.code,
      }),
    ]);
  });
});
