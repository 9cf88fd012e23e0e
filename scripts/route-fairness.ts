// POST /v1/route latency for one key while another queues the largest allowed experiment on seeds
// the process has not seen, next to the same with no run, measured in one run; both over real HTTP
// against the local stack (DynamoDB Local, fauxqs) wired as `harness-s serve` wires it.
// Run: node --import tsx scripts/route-fairness.ts [seconds per phase, default 30] [--in-process]
// (--in-process builds instances on the API's thread, as main did before issue 18, for comparison)
import { EXPERIMENT_LIMITS, LocalPolicyEndpoints, newApiKey, percentile } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import { bodyLimitOf, createApp } from "@harness-s/functions/api/app";
import { listen } from "@harness-s/functions/api/local";
import { startLocalStack } from "@harness-s/functions/local/stack";
import { localQueuedExperiment } from "../packages/cli/src/runtime/local-aws.ts";

const seconds = Number(process.argv[2] ?? 30);
const inProcess = process.argv.includes("--in-process");
const setupFor = inProcess ? embeddedSetups(defaultEmbeddedSettings) : embeddedSetups(defaultEmbeddedSettings, offThreadInstances());
const setup = setupFor("test");
const endpoints = new LocalPolicyEndpoints(setup.env);
const prepare = localQueuedExperiment(setupFor, endpoints);
const stack = await startLocalStack({ tasks: { get: async () => undefined }, policies: endpoints, prepareExperiment: prepare });
const inst = await setup.instance(1);
await stack.deps.pools.put(inst.evolution.pool);
for (const p of Object.values(inst.evolution.initialProfiles)) await stack.deps.profiles.put(inst.evolution.pool.id, p);
const keys = ["runner", "router"].map((id) => newApiKey(id, ["route", "experiments"]));
for (const k of keys) await stack.deps.keys.put(k.record);
const api = await listen(createApp(stack.deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(stack.deps) });
const post = (path: string, body: unknown, secret: string) =>
  fetch(`${api.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${secret}` }, body: JSON.stringify(body) });
const routeBody = { poolId: inst.evolution.pool.id, task: { id: "t1", family: "app", tags: ["app", "bulk"] }, failureTags: ["incomplete-results"], k: 2 };

async function phase(label: string) {
  const ms: number[] = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const t = performance.now();
    const res = await post("/v1/route", routeBody, keys[1]!.secret);
    await res.arrayBuffer();
    ms.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  const stall = ms.filter((m) => m > 100).reduce((a, b) => a + b, 0);
  console.log(
    `| ${label} | ${ms.length} | ${percentile(ms, 0.5).toFixed(1)} ms | ${percentile(ms, 0.99).toFixed(1)} ms | ${Math.max(...ms).toFixed(0)} ms | ${(stall / 1000).toFixed(1)} s |`,
  );
}

console.log(`instances built ${inProcess ? "on the API's thread (as before)" : "on a worker thread"}; ${seconds} s per phase\n`);
console.log("| phase | requests | p50 | p99 | max | time in requests over 100 ms |\n|---|---|---|---|---|---|");
await phase("no experiment running");
const seeds = Array.from({ length: EXPERIMENT_LIMITS.seeds }, (_, i) => 5001 + i);
const queued = await post("/v1/experiments", { seeds, arms: ["grpo"], train: { steps: 1, batchSize: 2 }, budget: { rollouts: 2000 } }, keys[0]!.secret);
const { id } = (await queued.json()) as { id: string };
await phase(`another key's experiment setting up ${seeds.length} new seeds`);
await post(`/v1/experiments/${id}/cancel`, {}, keys[0]!.secret);
await api.close();
process.exit(0);
