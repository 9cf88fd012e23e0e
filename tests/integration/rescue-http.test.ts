import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Envelope } from "@harness-s/core/messaging";
import { NotConfiguredError, runEpisode, type Task } from "@harness-s/core";
import { RESCUE_SLOTS } from "@harness-s/core/rescue";
import { rolloutRunners, singlePolicyEndpoint } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import type { MemoryQueue } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeSqsEvent } from "../factories.ts";

let inst: SeedInstance;
let deps: ReturnType<typeof memoryApiDeps>;
let api: { url: string; close: () => Promise<void> };
let key: string;
let runRollout: (t: Task, h: Parameters<typeof runEpisode>[1], s: number) => ReturnType<typeof runEpisode>;

beforeAll(async () => {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  inst = await setup.instance(1);
  const byId = new Map([...inst.train, ...inst.heldout].map((t) => [t.id, t]));
  const policy = setup.createPolicy(1);
  runRollout = (t, h, s) => runEpisode(t, h, s, { env: setup.env, policy });
  deps = memoryApiDeps({ tasks: { get: async (id) => byId.get(id) } });
  await seedPool(deps, inst.evolution.pool, inst.evolution.initialProfiles);
  key = await addKey(deps, "k", ["rescues"]);
  api = await startApi(deps);
}, 120_000); // evolving the pool is CPU work: on a loaded machine well past the default 10 s
afterAll(() => api.close());

const post = (body: unknown, secret = key) =>
  fetch(`${api.url}/v1/rescues`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
    body: JSON.stringify(body),
  });

describe("elastic rescue over HTTP", () => {
  it("accepts a rescue, fans out k × n rollouts, and reports them once each even under redelivery", async () => {
    const task = inst.train.find((t) => t.requirements.includes("pages"))!;
    const res = await post({
      poolId: inst.evolution.pool.id,
      taskId: task.id,
      failureTags: ["incomplete-results"],
      failedEvents: ["page:more"],
      k: 2,
      rolloutsPerHarness: 3,
    });
    expect(res.status).toBe(202);
    const { id, chosen, expected } = await res.json();
    expect(chosen).toHaveLength(2);
    expect(expected).toBe(6);
    const sent = (deps.dispatch as MemoryQueue).take();
    expect(sent).toHaveLength(6);
    const running = await (
      await fetch(`${api.url}/v1/rescues/${id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(running).toMatchObject({ status: "running", completed: 0 });

    const handler = createDispatchHandler({
      pools: deps.pools,
      tasks: deps.tasks,
      rollouts: deps.rollouts,
      runners: rolloutRunners({ service: singlePolicyEndpoint(runRollout) }),
    });
    expect(await handler(makeSqsEvent(sent))).toEqual({ batchItemFailures: [] });
    expect(await handler(makeSqsEvent(sent, 2))).toEqual({ batchItemFailures: [] });

    const done = await (
      await fetch(`${api.url}/v1/rescues/${id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(done.status).toBe("done");
    expect(done.completed).toBe(6);
    expect(done.rollouts.map((r: { index: number }) => r.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(done.rollouts.map((r: { harnessId: string }) => r.harnessId))).toEqual(new Set(chosen));
  });

  it("answers 404 for an unknown task, 403 without the rescues scope, 400 without failure tags", async () => {
    expect((await post({ poolId: inst.evolution.pool.id, taskId: "nope", failureTags: ["x"] })).status).toBe(404);
    const other = await addKey(deps, "k-route", ["route"]);
    expect(
      (await post({ poolId: inst.evolution.pool.id, taskId: inst.train[0]!.id, failureTags: ["x"] }, other)).status,
    ).toBe(403);
    const bad = await post({ poolId: inst.evolution.pool.id, taskId: inst.train[0]!.id, failureTags: [] });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.issues[0]).toMatch(/^failureTags:/);
  });

  it("runs exactly the named harnesses without a vote (a trainer's base group), and refuses a name outside the pool", async () => {
    const task = inst.train[0]!;
    const base = inst.evolution.pool.base.id;
    const before = await deps.meter.get("k");
    const res = await post({
      poolId: inst.evolution.pool.id,
      taskId: task.id,
      harnesses: [base],
      rolloutsPerHarness: 3,
    });
    expect(res.status).toBe(202);
    const { id, chosen, expected } = await res.json();
    expect([chosen, expected]).toEqual([[base], 3]);
    expect(id).toMatch(/^rsc_run_/);
    const sent = (deps.dispatch as MemoryQueue).take();
    expect(sent.map((e) => (e.body as { harnessId: string }).harnessId)).toEqual([base, base, base]);
    const after = await deps.meter.get("k");
    expect([after.ballots - before.ballots, after.rollouts - before.rollouts]).toEqual([0, 3]);
    const unknown = await post({
      poolId: inst.evolution.pool.id,
      taskId: task.id,
      harnesses: [base, "no-such-harness"],
    });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error.issues).toEqual([
      `harnesses: no-such-harness is not a harness of pool ${inst.evolution.pool.id}`,
    ]);
  });

  it("cancels: slots not started are never run, the ones run before stay; another key cannot cancel it", async () => {
    const task = inst.train[0]!;
    const res = await post({
      poolId: inst.evolution.pool.id,
      taskId: task.id,
      failureTags: ["incomplete-results"],
      k: 2,
      rolloutsPerHarness: 2,
    });
    const { id, expected } = await res.json();
    const sent = (deps.dispatch as MemoryQueue).take();
    let ran = 0;
    const counting = (t: Task, h: Parameters<typeof runEpisode>[1], s: number) => {
      ran++;
      return runRollout(t, h, s);
    };
    const handler = createDispatchHandler({
      pools: deps.pools,
      tasks: deps.tasks,
      rollouts: deps.rollouts,
      jobs: deps.jobs,
      runners: rolloutRunners({ service: singlePolicyEndpoint(counting) }),
    });
    expect(await handler(makeSqsEvent(sent.slice(0, 1)))).toEqual({ batchItemFailures: [] });
    const other = await addKey(deps, "k-other-cancel", ["rescues"]);
    const cancel = (secret: string) =>
      fetch(`${api.url}/v1/rescues/${id}/cancel`, { method: "POST", headers: { authorization: `Bearer ${secret}` } });
    expect((await cancel(other)).status).toBe(404);
    const cancelled = await cancel(key);
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ status: "cancelled", completed: 1 });
    // The rest are delivered after the cancel: acknowledged, never run.
    expect(await handler(makeSqsEvent(sent.slice(1)))).toEqual({ batchItemFailures: [] });
    expect(ran).toBe(1);
    const after = await (
      await fetch(`${api.url}/v1/rescues/${id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(after).toMatchObject({ status: "cancelled", completed: 1, failed: [] });
    expect(expected).toBe(4);
  });

  it("a status read with ?wait answers as soon as a slot finishes, and at the end of its wait when none does", async () => {
    const task = inst.train[1]!;
    const { id } = await (
      await post({
        poolId: inst.evolution.pool.id,
        taskId: task.id,
        failureTags: ["incomplete-results"],
        k: 1,
        rolloutsPerHarness: 2,
      })
    ).json();
    const sent = (deps.dispatch as MemoryQueue).take();
    const handler = createDispatchHandler({
      pools: deps.pools,
      tasks: deps.tasks,
      rollouts: deps.rollouts,
      runners: rolloutRunners({ service: singlePolicyEndpoint(runRollout) }),
    });
    const read = (query: string) =>
      fetch(`${api.url}/v1/rescues/${id}?${query}`, { headers: { authorization: `Bearer ${key}` } });
    const t0 = performance.now();
    const idle = await (await read("wait=0.6&seen=0")).json();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(550);
    expect(idle).toMatchObject({ status: "running", completed: 0 });
    const waiting = read("wait=10&seen=0");
    await new Promise((r) => setTimeout(r, 300));
    await handler(makeSqsEvent(sent.slice(0, 1)));
    const moved = await (await waiting).json();
    expect(moved).toMatchObject({ status: "running", completed: 1 });
    expect((await read("wait=21")).status).toBe(400);
  });

  it("holds a key's rescue rollouts in flight to RESCUE_SLOTS: past them 429, and the slots come back when the rescue's end is seen", async () => {
    const slotKey = await addKey(deps, "k-slots", ["rescues"]);
    const base = inst.evolution.pool.base.id;
    const task = inst.train[2]!;
    const full = {
      poolId: inst.evolution.pool.id,
      taskId: task.id,
      harnesses: Array(8).fill(base),
      rolloutsPerHarness: RESCUE_SLOTS.perKey / 8,
    };
    const first = await post(full, slotKey);
    expect(first.status).toBe(202);
    const { id } = await first.json();
    const refused = await post({ ...full, harnesses: [base], rolloutsPerHarness: 1 }, slotKey);
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.code).toBe("CONCURRENCY_LIMIT");
    // Another key's slots are its own.
    expect((await post({ ...full, harnesses: [base], rolloutsPerHarness: 1 })).status).toBe(202);
    const sent = (deps.dispatch as MemoryQueue).take().filter((e) => (e.body as { jobId: string }).jobId === id);
    const handler = createDispatchHandler({
      pools: deps.pools,
      tasks: deps.tasks,
      rollouts: deps.rollouts,
      runners: rolloutRunners({ service: singlePolicyEndpoint(runRollout) }),
    });
    expect(await handler(makeSqsEvent(sent))).toEqual({ batchItemFailures: [] });
    const done = await (
      await fetch(`${api.url}/v1/rescues/${id}`, { headers: { authorization: `Bearer ${slotKey}` } })
    ).json();
    expect(done.status).toBe("done");
    expect((await post({ ...full, harnesses: [base], rolloutsPerHarness: 1 }, slotKey)).status).toBe(202);
  });

  it("a dispatch message for another queue's type is reported as a failure, not dropped", async () => {
    const handler = createDispatchHandler({
      pools: deps.pools,
      tasks: deps.tasks,
      rollouts: deps.rollouts,
      runners: rolloutRunners({ service: singlePolicyEndpoint(runRollout) }),
      log: () => undefined,
    });
    const wrong: Envelope = {
      v: 1,
      id: "e",
      type: "profile.evidence",
      body: {
        poolId: "p",
        harnessId: "h",
        family: "app",
        success: true,
        rescueOf: [],
        taskTags: [],
        turns: 1,
        policyVersion: 0,
        behaviours: {},
      },
    };
    expect(await handler(makeSqsEvent([wrong]))).toEqual({ batchItemFailures: [{ itemIdentifier: "m0" }] });
  });

  it("a deployment without dispatch answers 501 with the reason", async () => {
    const notHere = () => Promise.reject(new NotConfiguredError("elastic rescues are not deployed here"));
    const bare = memoryApiDeps({ tasks: { get: notHere }, dispatch: { send: notHere } });
    await seedPool(bare, inst.evolution.pool, inst.evolution.initialProfiles);
    const secret = await addKey(bare, "k", ["rescues"]);
    const server = await startApi(bare);
    try {
      const res = await fetch(`${server.url}/v1/rescues`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
        body: JSON.stringify({ poolId: inst.evolution.pool.id, taskId: "t", failureTags: ["x"] }),
      });
      expect(res.status).toBe(501);
      expect((await res.json()).error.message).toMatch(/not deployed/);
    } finally {
      await server.close();
    }
  });
});
