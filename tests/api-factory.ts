import { newApiKey, type Scope } from "@harness-s/core/access";
import type { HarnessPool } from "@harness-s/core";
import type { ProfileSet } from "@harness-s/core/profile";
import { bodyLimitOf, createApp } from "../functions/api/app.ts";
import type { ApiDeps } from "../functions/api/deps.ts";
import { listen, memoryApiDeps } from "../functions/api/local.ts";

export { memoryApiDeps };

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
export function startApi(deps: ApiDeps): Promise<{ url: string; close: () => Promise<void> }> {
  return listen(createApp(deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(deps) });
}
