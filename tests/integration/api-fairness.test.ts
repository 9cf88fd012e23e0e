import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { LocalPolicyEndpoints } from "@harness-s/core/dispatch";
import { defaultEmbeddedSettings, embeddedSetups, offThreadInstances } from "@harness-s/envs";
import { startLocalStack, type LocalStack } from "@harness-s/functions/local";
import { localQueuedExperiment } from "../../packages/cli/src/runtime/local-aws.ts";
import { addKey, seedPool, startApi } from "../api-factory.ts";

// Issue 18, item 6: one key queuing an experiment on seeds the process has not seen must not
// stall another key's requests. The stack is wired as `harness-s serve` wires it: the seeds'
// instances (seconds of evolution each) are built on a worker thread.
let stack: LocalStack;
let api: { url: string; close: () => Promise<void> };
let runner: string;
let router: string;
let poolId: string;

beforeAll(async () => {
  const build = offThreadInstances();
  const setupFor = embeddedSetups(defaultEmbeddedSettings, build);
  const setup = setupFor("test");
  const endpoints = new LocalPolicyEndpoints(setup.env);
  const prepare = localQueuedExperiment(setupFor, endpoints);
  stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async () => undefined },
    policies: endpoints,
    // The run's set-up is what is measured; the run itself then ends (failed), so nothing outlives the test.
    prepareExperiment: (record, parts) =>
      prepare(record, parts).then(() => Promise.reject(new Error("this stack only sets experiments up"))),
  });
  const inst = await setup.instance(1);
  poolId = inst.evolution.pool.id;
  await seedPool(stack.deps, inst.evolution.pool, inst.evolution.initialProfiles);
  const all = ["route", "experiments"] as const;
  runner = await addKey(stack.deps, "k-runner", [...all]);
  router = await addKey(stack.deps, "k-router", [...all]);
  api = await startApi(stack.deps);
}, 60_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
}, 60_000);

const get = (path: string, secret: string) =>
  fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${secret}` } });
const post = (path: string, body: unknown, secret: string) =>
  fetch(`${api.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
    body: JSON.stringify(body),
  });

describe("no caller stalls another", () => {
  it("answers another key's route requests promptly while an experiment sets up seeds never seen", async () => {
    const route = async () => {
      const started = performance.now();
      const res = await post(
        "/v1/route",
        { poolId, task: { id: "t1", family: "app", tags: ["app", "bulk"] }, failureTags: ["incomplete-results"], k: 2 },
        router,
      );
      expect(res.status).toBe(200);
      return performance.now() - started;
    };
    await route();
    const queued = await post(
      "/v1/experiments",
      { seeds: [311], arms: ["grpo"], train: { steps: 1, batchSize: 2 }, budget: { rollouts: 2000 } },
      runner,
    );
    expect(queued.status).toBe(202);
    const { id } = await queued.json();
    const latencies: number[] = [];
    const setUp = async () =>
      ["failed", "done", "cancelled"].includes((await (await get(`/v1/experiments/${id}`, runner)).json()).status);
    for (const deadline = Date.now() + 40_000; Date.now() < deadline && !(await setUp()); ) {
      latencies.push(await route());
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await setUp()).toBe(true);
    // On main the whole evolution of a seed ran on the API's event loop: one request waited ~5 s.
    expect(Math.max(...latencies)).toBeLessThan(1_500);
    expect(latencies.length).toBeGreaterThan(5);
  }, 60_000);
});
