import { describe, expect, it } from "vitest";
import { createPool, systemClock } from "@harness-s/core";
import { makeSpec } from "../factories.ts";
import { newApiKey } from "@harness-s/core/access";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { MemoryPolicyEndpointStore } from "@harness-s/adapters/stores";
import { createApp } from "../../functions/api/app.ts";
import { memoryApiDeps } from "../../functions/api/local.ts";

// Issue 67 item 8: a quote is never a price for what the service would refuse to run. Each body
// is posted as a run and as a quote of it: both answer the same status and code.

const task = (id: string, split: string) => ({
  id,
  split,
  family: "app",
  instruction: "do it",
  tools: [{ name: "submit", submit: true }],
});
const callerEnv = (url: string, over: Record<string, unknown> = {}) => ({
  kind: "openenv",
  url,
  tasks: [task("a", "train"), task("b", "dev"), task("c", "held-out")],
  ...over,
});
const offers = { envs: ["embedded", "dbbench"], callerEnvironments: true, models: ["tiny"], served: [] };
const BODIES: [string, Record<string, unknown>][] = [
  ["an unknown env", { env: "bogus" }],
  ["an env in the wrong case", { env: "EMBEDDED" }],
  ["a model not served", { model: "gpt-7" }],
  ["an ftp: URL", { env: callerEnv("ftp://93.184.216.34/") }],
  ["a URL with credentials", { env: callerEnv("http://user:pw@93.184.216.34/") }],
  ["an unspecified address", { env: callerEnv("http://0.0.0.0:8080/") }],
  ["a mapped IPv6 loopback", { env: callerEnv("http://[::ffff:127.0.0.1]/") }],
  ["a private address", { env: callerEnv("http://10.0.0.7/") }],
  ["another key's pool", { env: callerEnv("http://93.184.216.34/", { poolId: "theirs" }) }],
  [
    "two committing tool names",
    {
      env: callerEnv("http://93.184.216.34/", {
        tasks: [
          task("a", "train"),
          { ...task("b", "dev"), tools: [{ name: "done", submit: true }] },
          task("c", "held-out"),
        ],
      }),
    },
  ],
];

async function setup() {
  const endpoints = new MemoryPolicyEndpointStore();
  const callers = new CallerPolicyRunners({
    endpoints,
    outbound: { allowLoopback: false, resolve: async () => ["93.184.216.34"] },
    clock: systemClock,
  });
  const deps = memoryApiDeps({ callers, offers });
  await deps.pools.put({
    ...createPool("theirs", makeSpec({ id: "h0" }), [makeSpec({ id: "sib", provenance: { direction: "recovery" } })]),
    owner: "someone-else",
  });
  const { secret, record } = newApiKey("k", ["experiments", "rescues"]);
  await deps.keys.put(record);
  const app = createApp(deps);
  const post = async (path: string, body: unknown) => {
    const res = await app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { error?: { code: string } };
    return [res.status, json.error?.code ?? "ok"];
  };
  return { post, deps };
}

describe("a quote refuses what its run refuses", () => {
  for (const [what, fields] of BODIES)
    it(`${what}: the run and its quote answer alike, and the quote is no price`, async () => {
      const { post, deps } = await setup();
      const body = { seeds: [1], arms: ["grpo"], budget: { rollouts: 100 }, ...fields };
      const run = await post("/v1/experiments", body);
      const quoted = await post("/v1/quotes", { experiment: body });
      expect(run[0]).toBeGreaterThanOrEqual(400);
      expect(quoted).toEqual(run);
      expect((await deps.experiments.listByKey("k", { limit: 5 })).items).toHaveLength(0);
    });

  it("a rescue of a pool the key may not see, or a task that does not exist, is refused as a quote as it is as a rescue", async () => {
    const { post } = await setup();
    for (const rescue of [
      { poolId: "theirs", taskId: "t1", failureTags: ["x"] },
      { poolId: "nowhere", taskId: "t1", failureTags: ["x"] },
    ]) {
      const run = await post("/v1/rescues", rescue);
      expect(await post("/v1/quotes", { rescue })).toEqual(run);
      expect(run[0]).toBe(404);
    }
  });

  it("an admitted request is quoted (200) as before", async () => {
    const { post } = await setup();
    expect(await post("/v1/quotes", { experiment: { seeds: [1], arms: ["grpo"], budget: { rollouts: 100 } } })).toEqual(
      [200, "ok"],
    );
  });
});
