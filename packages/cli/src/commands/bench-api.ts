import autocannon from "autocannon";
import { Hono } from "hono";
import { z } from "zod";
import { newApiKey, type SeedInstance } from "@harness-s/core";
import { MemoryPoolStore, MemoryProfileStore } from "@harness-s/adapters";
import { createApp } from "@harness-s/functions/api/app";
import { listen, memoryApiDeps } from "@harness-s/functions/api/local";

async function load(url: string, body: string, headers: Record<string, string>, seconds: number) {
  const r = await autocannon({ url, method: "POST", body, headers: { "content-type": "application/json", ...headers }, connections: 10, duration: seconds });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

/**
 * Router API requests/s and p50/p99 over loopback (autocannon, 10 connections), next to a bare
 * Hono endpoint that only validates a body with zod, measured in the same run.
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
  const bare = new Hono().post("/", async (c) => c.json(Body.parse(await c.req.json())));
  const api = await listen(app.fetch);
  const base = await listen(bare.fetch);
  try {
    const body = JSON.stringify({
      poolId: instance.evolution.pool.id,
      task: { id: "bench-1", family: "app", tags: ["app", "bulk"] },
      failureTags: ["incomplete-results"],
      failedEvents: ["page:more"],
      k: 2,
    });
    const router = await load(`${api.url}/v1/route`, body, { authorization: `Bearer ${secret}` }, seconds);
    const hono = await load(base.url, body, {}, seconds);
    return [
      `router API (HTTP, loopback)  ${router.rps.toFixed(0).padStart(8)} req/s   p50 ${router.p50} ms, p99 ${router.p99} ms, errors ${router.errors}`,
      `  bare Hono + zod baseline   ${hono.rps.toFixed(0).padStart(8)} req/s   p50 ${hono.p50} ms, p99 ${hono.p99} ms; router/bare throughput ratio ${(router.rps / hono.rps).toFixed(2)}`,
    ];
  } finally {
    await Promise.all([api.close(), base.close()]);
  }
}
