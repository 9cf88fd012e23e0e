import { newApiKey } from "@harness-s/core/access";
import { createApp } from "../functions/api/app.ts";
import { memoryApiDeps } from "../functions/api/local.ts";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
const inst = await embeddedSetup(defaultEmbeddedSettings).instance(1);
const deps = memoryApiDeps({});
await deps.pools.put(inst.evolution.pool);
for (const p of Object.values(inst.evolution.initialProfiles)) await deps.profiles.put(inst.evolution.pool.id, p);
const { secret, record } = newApiKey("bench", ["route"]);
await deps.keys.put(record);
const app = createApp(deps);
const body = JSON.stringify({
  poolId: inst.evolution.pool.id,
  task: { id: "bench-1", family: "app", tags: ["app", "bulk"] },
  failureTags: ["incomplete-results"],
  failedEvents: ["page:more"],
  k: 2,
});
const go = () => app.request("/v1/route", { method: "POST", body, headers: { "content-type": "application/json", authorization: `Bearer ${secret}` } });
for (let i = 0; i < 300; i++) await go();
const t = performance.now();
for (let i = 0; i < 3000; i++) await go();
console.log("req/s in-process", (3000 / ((performance.now() - t) / 1000)).toFixed(0), (await go()).status);
