import { serve, type ServerType } from "@hono/node-server";
import { systemClock, statisticalVoters, newApiKey, type HarnessPool, type ProfileSet, type Scope } from "@harness-s/core";
import { MemoryApiKeyStore, MemoryDecisionStore, MemoryPoolStore, MemoryProfileStore, MemoryQueue, MemoryUsageMeter } from "@harness-s/adapters";
import { createApp } from "../functions/api/app.ts";
import type { ApiDeps } from "../functions/api/deps.ts";

/** In-memory API deps with a counter for ids; override any store to test an adapter. */
export function memoryApiDeps(over: Partial<ApiDeps> = {}): ApiDeps {
  let n = 0;
  return {
    pools: new MemoryPoolStore(),
    profiles: new MemoryProfileStore(),
    decisions: new MemoryDecisionStore(),
    keys: new MemoryApiKeyStore(),
    meter: new MemoryUsageMeter(),
    evidence: new MemoryQueue(),
    voters: statisticalVoters,
    clock: systemClock,
    newId: () => `dec_${++n}`,
    maxBodyBytes: 64 * 1024,
    ...over,
  };
}

export async function seedPool(deps: ApiDeps, pool: HarnessPool, profiles: ProfileSet): Promise<void> {
  await deps.pools.put(pool);
  for (const p of Object.values(profiles)) await deps.profiles.put(pool.id, p);
}

export async function addKey(deps: ApiDeps, id: string, scopes: Scope[], quota?: number): Promise<string> {
  const { secret, record } = newApiKey(id, scopes, quota);
  await deps.keys.put(record);
  return secret;
}

/** Serves the app on an ephemeral loopback port. */
export async function startApi(deps: ApiDeps): Promise<{ url: string; close: () => Promise<void> }> {
  const app = createApp(deps);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}
