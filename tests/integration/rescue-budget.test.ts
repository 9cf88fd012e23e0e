import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rolloutRunners, type CallerPolicies } from "@harness-s/core/dispatch";
import { runEpisode } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import type { MemoryQueue } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeSqsEvent } from "../factories.ts";

// Issue 31, item 5: a caller rescue's spend (policy tokens, environment time) is metered to its
// key for every rollout, failed or not, and held against the budget given with the rescue: no slot
// starts once it is spent. The caller's policy here reports a fixed spend per rollout.
let inst: SeedInstance;
let deps: ReturnType<typeof memoryApiDeps>;
let api: Awaited<ReturnType<typeof startApi>>;
let key: string;
let failNext = false;
let ran = 0;

beforeAll(async () => {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  inst = await setup.instance(1);
  const policy = setup.createPolicy(1);
  const callers: CallerPolicies = {
    checkEnvironment: async () => undefined,
    checkEndpoint: async () => undefined,
    currentVersion: async () => 0,
    datums: async () => [],
    runner: async (_caller, onSpend) => async (task, harness, seed) => {
      ran++;
      onSpend?.({ policyTokens: 100, policyMs: 20, environmentMs: 5 });
      if (failNext) throw new Error("the caller's environment went away");
      return runEpisode(task, harness, seed, { env: setup.env, policy });
    },
  };
  const byId = new Map(inst.train.map((t) => [t.id, t]));
  deps = memoryApiDeps({ callers, tasks: { get: async (id) => byId.get(id) } });
  await seedPool(deps, inst.evolution.pool, inst.evolution.initialProfiles);
  key = await addKey(deps, "k-budget", ["rescues"]);
  api = await startApi(deps);
}, 120_000);
afterAll(() => api.close());

async function start(budget?: unknown) {
  const task = inst.train[0]!;
  const tools = [
    { name: "list_items", submit: false },
    { name: "submit", submit: true },
  ];
  const res = await fetch(`${api.url}/v1/rescues`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      poolId: inst.evolution.pool.id,
      failureTags: ["incomplete-results"],
      k: 2,
      rolloutsPerHarness: 3,
      caller: {
        endpoint: "mine",
        environment: { kind: "builtin", id: "embedded" },
        task: { id: task.id, family: task.family, tags: task.tags, tools },
        ...(budget ? { budget } : {}),
      },
    }),
  });
  expect(res.status).toBe(202);
  return (await res.json()).id as string;
}

const status = async (id: string) =>
  (await fetch(`${api.url}/v1/rescues/${id}`, { headers: { authorization: `Bearer ${key}` } })).json();

describe("a caller rescue's spend and budget", () => {
  it("meters every rollout's policy tokens and environment time to the key, and starts no slot once the budget is spent", async () => {
    const before = await deps.meter.get("k-budget");
    const id = await start({ policyTokens: 250 });
    const sent = (deps.dispatch as MemoryQueue).take();
    expect(sent).toHaveLength(6);
    const handler = createDispatchHandler({
      ...deps,
      jobs: deps.jobs,
      meter: deps.meter,
      runners: rolloutRunners({ caller: deps.callers! }),
    });
    ran = 0;
    for (const message of sent) expect(await handler(makeSqsEvent([message]))).toEqual({ batchItemFailures: [] });
    // 0, 100, 200 spent when the first three started (each under 250); 300 after: the rest never ran.
    expect(ran).toBe(3);
    const end = await status(id);
    expect(end).toMatchObject({
      status: "failed",
      completed: 3,
      spent: { policyTokens: 300, policySeconds: 0.06, environmentSeconds: 0.015 },
    });
    expect(end.failed.map((f: { code: string; reason: string }) => [f.code, f.reason])).toEqual(
      Array(3).fill(["BUDGET_EXCEEDED", "the rescue's rollouts sampled 300 policy tokens of a budget of 250"]),
    );
    const after = await deps.meter.get("k-budget");
    expect([
      after.policyTokens - before.policyTokens,
      after.policyMs - before.policyMs,
      after.environmentMs - before.environmentMs,
    ]).toEqual([300, 60, 15]);
  });

  it("meters a rollout that fails as well as one that succeeds, and fails its slot at once with its code (no redelivery)", async () => {
    const before = await deps.meter.get("k-budget");
    const id = await start();
    const [message] = (deps.dispatch as MemoryQueue).take();
    const handler = createDispatchHandler({
      ...deps,
      jobs: deps.jobs,
      meter: deps.meter,
      runners: rolloutRunners({ caller: deps.callers! }),
      log: () => undefined,
    });
    failNext = true;
    try {
      expect((await handler(makeSqsEvent([message!]))).batchItemFailures).toEqual([]);
    } finally {
      failNext = false;
    }
    const after = await deps.meter.get("k-budget");
    expect(after.policyTokens - before.policyTokens).toBe(100);
    expect((await status(id)).failed[0]).toEqual({
      index: 0,
      code: "ROLLOUT_FAILED",
      reason: "the caller's environment went away",
    });
  });
});
