import autocannon from "autocannon";
import { Hono } from "hono";
import { z } from "zod";
import { RouteRequest, routeTask } from "@harness-s/core/routing";
import { newApiKey } from "@harness-s/core/access";
import type { SeedInstance } from "@harness-s/core/experiment";
import { MemoryPoolStore, MemoryProfileStore } from "@harness-s/adapters/stores";
import { createApp } from "@harness-s/functions/api";
import { listen, memoryApiDeps } from "@harness-s/functions/api";

export type Load = { rps: number; p50: number; p99: number; errors: number };

export async function load(url: string, body: string, headers: Record<string, string>, seconds: number): Promise<Load> {
  const r = await autocannon({
    url,
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
    connections: 10,
    duration: seconds,
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

/** Each figure's median over rounds (errors summed). */
export function median(runs: readonly Load[]): Load {
  const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    rps: mid(runs.map((r) => r.rps)),
    p50: mid(runs.map((r) => r.p50)),
    p99: mid(runs.map((r) => r.p99)),
    errors: runs.reduce((n, r) => n + r.errors, 0),
  };
}

/**
 * Router API requests/s and p50/p99 over loopback (autocannon, 10 connections), in the same run
 * as two bare Hono endpoints on the same stores: one that parses the body with the same zod type
 * and calls the same use-case (`routeTask`: the pool and profiles read, the vote, the decision
 * written) with none of the API's authorisation, metering, body limits or OpenAPI layer; and one
 * that only validates the body (the floor of an HTTP request here). Each is measured in three
 * interleaved rounds of `seconds`; the figures are the medians.
 */
export async function benchApi(instance: SeedInstance, seconds: number): Promise<string[]> {
  const pools = new MemoryPoolStore();
  const profiles = new MemoryProfileStore();
  await pools.put(instance.evolution.pool);
  for (const p of Object.values(instance.evolution.initialProfiles)) await profiles.put(instance.evolution.pool.id, p);
  const deps = memoryApiDeps({ pools, profiles });
  const { secret, record } = newApiKey("bench", ["route"]);
  await deps.keys.put(record);
  const app = createApp(deps);
  const Body = z.object({ poolId: z.string(), task: z.object({ id: z.string(), family: z.string() }) });
  const echo = new Hono().post("/", async (c) => c.json(Body.parse(await c.req.json())));
  const bare = new Hono().post("/", async (c) => c.json(await routeTask(RouteRequest.parse(await c.req.json()), deps)));
  const api = await listen(app.fetch);
  const base = await listen(bare.fetch);
  const floor = await listen(echo.fetch);
  try {
    const body = JSON.stringify({
      poolId: instance.evolution.pool.id,
      task: { id: "bench-1", family: "app", tags: ["app", "bulk"] },
      failureTags: ["incomplete-results"],
      failedEvents: ["page:more"],
      k: 2,
    });
    // Three interleaved rounds, the median of each figure: a machine whose speed drifts during the
    // run (other processes, thermal) moves every endpoint alike instead of the one measured last.
    const rounds = { router: [] as Load[], hono: [] as Load[], bodyOnly: [] as Load[] };
    for (let i = 0; i < 3; i++) {
      rounds.router.push(await load(`${api.url}/v1/route`, body, { authorization: `Bearer ${secret}` }, seconds));
      rounds.hono.push(await load(base.url, body, {}, seconds));
      rounds.bodyOnly.push(await load(floor.url, body, {}, seconds));
    }
    const [router, hono, bodyOnly] = [median(rounds.router), median(rounds.hono), median(rounds.bodyOnly)];
    const line = (name: string, r: typeof router) =>
      `${name.padEnd(34)}${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors}`;
    return [
      line("router API /v1/route (loopback)", router),
      `${line("  bare Hono + zod, same use-case", hono)}; router/bare ${(router.rps / hono.rps).toFixed(2)}`,
      `${line("  bare Hono + zod, body only", bodyOnly)}; router/body-only ${(router.rps / bodyOnly.rps).toFixed(2)}`,
    ];
  } finally {
    await Promise.all([api.close(), base.close(), floor.close()]);
  }
}
