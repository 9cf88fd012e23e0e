import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { newApiKey } from "@harness-s/core/access";
import { percentile } from "@harness-s/core/metrics";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { LocalPolicyEndpoints } from "@harness-s/core/dispatch";
import { startLocalStack, type LocalStack } from "@harness-s/functions/local";
import { seedPool, startApi } from "../api-factory.ts";

// Issue 56, item 3: one key flooding past its rate never slows another key's requests. The flood
// comes from a process of its own (as it would from another machine): its requests are refused
// (429) by the API from the key's shared bucket (issue 71: leased in blocks; a refusal while the bucket is known
// empty costs no store request), before metering,
// and held before their answer (RATE_LIMIT_HOLD_MS), so the flood slows to a request a connection
// per hold. Without the hold, 8 connections sent ~1,000 refused requests a second and the other
// key's p99 went from 65 to 120-150 ms.
let stack: LocalStack;
let api: { url: string; close: () => Promise<void> };
let flooder: string;
let calm: string;
let poolId: string;
let flood: ChildProcess | undefined;

beforeAll(async () => {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async () => undefined },
    policies: new LocalPolicyEndpoints(setup.env),
  });
  const inst = await setup.instance(1);
  poolId = inst.evolution.pool.id;
  await seedPool(stack.deps, inst.evolution.pool, inst.evolution.initialProfiles);
  const a = newApiKey("k-flood", ["route"]);
  await stack.deps.keys.put({ ...a.record, rate: { perSecond: 5, burst: 5 } });
  const b = newApiKey("k-calm", ["route"]);
  await stack.deps.keys.put(b.record);
  [flooder, calm] = [a.secret, b.secret];
  api = await startApi(stack.deps);
}, 60_000);
afterAll(async () => {
  flood?.kill("SIGKILL");
  await api?.close();
  await stack?.stop();
}, 60_000);

const routeBody = () =>
  JSON.stringify({
    poolId,
    task: { id: "t1", family: "app", tags: ["app", "bulk"] },
    failureTags: ["incomplete-results"],
    k: 2,
  });

async function routeLatencies(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await fetch(`${api.url}/v1/route`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${calm}` },
      body: routeBody(),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    out.push(performance.now() - started);
  }
  return out;
}

const p99 = (xs: readonly number[]) => percentile(xs, 99);

/**
 * A process sending the flooding key's requests, `connections` at a time, back to back; it counts each status and
 * prints them when told to stop.
 */
function startFlood(connections: number): { stop: () => Promise<Record<string, number>> } {
  const script = `
    const http = require("node:http");
    const agent = new http.Agent({ keepAlive: true, maxSockets: ${connections} });
    const [url, secret, body] = process.argv.slice(1);
    const counts = {};
    let running = true;
    process.on("message", () => { running = false; });
    const post = () => new Promise((resolve) => {
      const req = http.request(url + "/v1/route", { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: "Bearer " + secret } }, (res) => {
        res.resume();
        res.on("end", () => { counts[res.statusCode] = (counts[res.statusCode] ?? 0) + 1; resolve(); });
      });
      req.on("error", () => { counts.error = (counts.error ?? 0) + 1; resolve(); });
      req.end(body);
    });
    const one = async () => { while (running) await post(); };
    Promise.all(Array.from({ length: ${connections} }, one)).then(() => { process.send(counts); process.disconnect(); });
  `;
  flood = spawn(process.execPath, ["-e", script, api.url, flooder, routeBody()], {
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const child = flood;
  return {
    stop: () =>
      new Promise((resolve) => {
        child.once("message", (m) => resolve(m as Record<string, number>));
        child.send("stop");
      }),
  };
}

/**
 * One round: alone and beside the flood in turns, a slice of each at a time, so a load that comes and goes on the
 * machine (other test files) weighs on both alike.
 */
async function measureRound(
  counts: Record<string, number>,
): Promise<{ alone: number; beside: number; floodSeconds: number }> {
  const alone: number[] = [];
  const beside: number[] = [];
  let floodSeconds = 0;
  for (let slice = 0; slice < 3; slice++) {
    alone.push(...(await routeLatencies(40)));
    const floodStarted = performance.now();
    const running = startFlood(8);
    await new Promise((r) => setTimeout(r, 500));
    beside.push(...(await routeLatencies(40)));
    for (const [status, n] of Object.entries(await running.stop())) counts[status] = (counts[status] ?? 0) + n;
    floodSeconds += (performance.now() - floodStarted) / 1000;
  }
  return { alone: p99(alone), beside: p99(beside), floodSeconds };
}

describe("a key flooding past its rate, beside another key", () => {
  it("is refused (429) past its rate while the other key's p99 stays within 2x of its p99 alone", async () => {
    await routeLatencies(20); // warm
    // Three rounds, and the median of their p99 ratios: a p99 of 120 requests is their second
    // slowest, which one pause of this 2-core machine's other work can double (CI saw 2.002x once,
    // where four runs of one round had given 0.8-1.6x); a flood that slows the other key slows it in
    // every round.
    const counts: Record<string, number> = {};
    const rounds = [];
    for (let round = 0; round < 3; round++) rounds.push(await measureRound(counts));
    const floodSeconds = rounds.reduce((sum, r) => sum + r.floodSeconds, 0);
    const [limited, served] = [counts["429"] ?? 0, counts["200"] ?? 0];
    const medianRatio = percentile(
      rounds.map((r) => r.beside / r.alone),
      50,
    );
    console.log(
      `p99 alone / beside the flood (ms), per round: ${rounds.map((r) => `${r.alone.toFixed(1)} / ${r.beside.toFixed(1)}`).join(", ")}; median ratio ${medianRatio.toFixed(2)}; the flood's answers ${JSON.stringify(counts)}`,
    );
    // Served at its rate (5 a second, a burst of 5 each time it starts), the rest refused, each refusal held up to
    // RATE_LIMIT_HOLD_MS.
    expect(served).toBeLessThanOrEqual(5 * floodSeconds + 9 * 5);
    expect(limited).toBeGreaterThan(2 * served);
    // Held, each connection gets a few answers a second (its wait for the next token, up to 1 s); unheld, ~100.
    expect((limited + served) / (8 * floodSeconds)).toBeLessThan(20);
    expect(medianRatio).toBeLessThan(2);
  }, 180_000);
});
