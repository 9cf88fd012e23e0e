import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { rolloutRunners } from "@harness-s/core/dispatch";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import type { MemoryQueue } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedCallerTask, embeddedSetup, TextEnvironment } from "@harness-s/envs";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeSqsEvent } from "../factories.ts";
import { goodSample, startHostilePolicy } from "../hostile-policy.ts";

// Issue 53, item 3: a stale version at the caller's worker reaches the caller with both versions.
// A caller rescue samples its endpoint at version 0; the trainer then moves on (its worker holds
// version 1), and re-scoring the rescue's rows in H0's context at the rescue's version 0 gets
// the worker's 409, which names both versions: the API answers 409 STALE_POLICY_VERSION with them.
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let deps: ReturnType<typeof memoryApiDeps>;
let api: Awaited<ReturnType<typeof startApi>>;
let policy: Awaited<ReturnType<typeof startHostilePolicy>>;
let key: string;

beforeAll(async () => {
  inst = await setup.instance(1);
  // The worker holds version 1 now; the rescue below samples version 0 (each sample answers at the version asked).
  policy = await startHostilePolicy(
    (_name, req) =>
      req.path.endsWith("/replay")
        ? {
            status: 409,
            json: {
              error: {
                code: "STALE_POLICY_VERSION",
                message: "policy mine is at version 1, not 0",
                held_version: 1,
                wanted_version: 0,
              },
            },
          }
        : { json: goodSample({ version: (req.body.version as { exact: number }).exact }) },
    1,
  );
  const byId = new Map(inst.train.map((t) => [t.id, t]));
  deps = memoryApiDeps({
    tasks: { get: async (id) => byId.get(id) },
    prober: new HttpEndpointProber({ allowLoopback: true }, systemClock),
  });
  deps.callers = new CallerPolicyRunners({
    endpoints: deps.endpoints,
    outbound: { allowLoopback: true },
    clock: systemClock,
    builtin: { embedded: new TextEnvironment(setup.env) },
  });
  await seedPool(deps, inst.evolution.pool, inst.evolution.initialProfiles);
  key = await addKey(deps, "k-stale", ["rescues"]);
  api = await startApi(deps);
}, 120_000);
afterAll(async () => {
  await api?.close();
  await policy?.close();
});

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

describe("a caller rescue whose trainer moved past its weight version", () => {
  it("re-scoring its rows in H0's context answers 409 STALE_POLICY_VERSION naming the version held and the one wanted", async () => {
    // Prepare: the endpoint, and a rescue of every sibling at version 0, its slots run
    expect(
      (await call("POST", "/v1/policy-endpoints", { id: "mine", kind: "protocol-v2", url: policy.url, policy: "mine" }))
        .status,
    ).toBe(201);
    const task = inst.train[0]!;
    const siblings = inst.evolution.pool.siblings.map((s) => s.id);
    const started = await call("POST", "/v1/rescues", {
      poolId: inst.evolution.pool.id,
      harnesses: siblings,
      rolloutsPerHarness: 1,
      caller: {
        endpoint: "mine",
        environment: { kind: "builtin", id: "embedded" },
        task: embeddedCallerTask(setup.env, task),
        maxTokens: 8,
        weightVersion: 0,
      },
    });
    expect(started.status, await started.clone().text()).toBe(202);
    const { id } = await started.json();
    const handler = createDispatchHandler({
      ...deps,
      runners: rolloutRunners({ caller: deps.callers! }),
      log: () => undefined,
    });
    expect(await handler(makeSqsEvent((deps.dispatch as MemoryQueue).take()))).toEqual({ batchItemFailures: [] });
    expect(await (await call("GET", `/v1/rescues/${id}`)).json()).toMatchObject({
      status: "done",
      completed: siblings.length,
    });
    // Act
    const sampled = await call("GET", `/v1/rescues/${id}/trajectories?context=sampled`);
    const base = await call("GET", `/v1/rescues/${id}/trajectories?context=base`);
    // Assess: the rows as sampled are there; re-scored at version 0, the worker's 409 names both versions
    expect(sampled.status).toBe(200);
    expect(policy.requests.filter((r) => r.path.endsWith("/replay")).map((r) => r.body.version)).toContainEqual({
      exact: 0,
    });
    expect([base.status, (await base.json()).error]).toEqual([
      409,
      {
        code: "STALE_POLICY_VERSION",
        message: expect.stringContaining("policy mine is at version 1, not 0"),
        heldVersion: 1,
        wantedVersion: 0,
      },
    ]);
  }, 60_000);
});
