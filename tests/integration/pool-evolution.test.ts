import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { systemClock } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { TokenPolicyClient } from "@harness-s/adapters/policy";
import { startOpenEnvServer } from "@harness-s/adapters/openenv";
import { defaultEmbeddedSettings, embeddedSetup, embeddedCallerTask } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { ensureWorkerVenv, startPolicyWorker } from "../../packages/cli/src/policy-worker.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";

// Issue 55, acceptance 4: a pool evolved for the caller's environment through `POST /v1/pools`,
// then a rescue routed in it, end to end on loopback through the real HTTP API and the local
// stack (DynamoDB Local, fauxqs, the coordinator and dispatch workers): env-serve --env embedded
// is the caller's OpenEnv environment (its dev tasks by id), the tiny policy worker the caller's
// policy endpoint (protocol v2). Kept quick: 3 dev tasks, 1 trial, 2 directions × 1 round × 2
// candidates (at most 15 rollouts). The tiny policy solves nothing, so a sibling "repairs" only
// with `repairMargin: 0` (no worse than H0): this checks the machinery (every rollout at the
// caller's endpoint and environment, the job, the pool, its owner, the rescue in it), not what
// evolution finds; the embedded suite's tests measure that.
const WORKER_TOKEN = "caller-secret-token";
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let worker: Awaited<ReturnType<typeof startPolicyWorker>>;
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let trainer: string;
let other: string;
let poolsOnly: string;

beforeAll(async () => {
  inst = await setup.instance(1);
  await ensureWorkerVenv();
  [worker, envServer] = await Promise.all([
    startPolicyWorker({ model: "tiny", token: WORKER_TOKEN, tuning: { chatPrompts: "render" } }),
    builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }).then((o) =>
      startOpenEnvServer(o),
    ),
  ]);
  await new TokenPolicyClient(worker.url, { token: WORKER_TOKEN, clock: systemClock }).create("trainer-policy", {
    base_model: "tiny",
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj"] },
    seed: 3,
  });
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst);
  trainer = await addKey(stack.deps, "k-trainer", ["rescues"]);
  other = await addKey(stack.deps, "k-other", ["rescues", "pools:read"]);
  poolsOnly = await addKey(stack.deps, "k-pools", ["pools:write"]);
  api = await startApi(stack.deps);
}, 600_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await envServer?.close();
  await worker?.stop();
}, 60_000);

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** The worker's policy registered as a key's endpoint (its bearer token as the secret header). */
const endpointOf = (url: string) => ({
  kind: "protocol-v2",
  url,
  policy: "trainer-policy",
  secretHeader: { name: "authorization", value: `Bearer ${WORKER_TOKEN}` },
});

/**
 * The evolution as the caller asks for it: its dev tasks as env-serve serves them, its H0's system text, its endpoint.
 */
const evolveRequest = () => ({
  name: "my-env",
  endpoint: "mine",
  environment: { kind: "openenv", url: envServer.url },
  system: "Solve the task with the tools.",
  devTasks: inst.dev.slice(0, 3).map((t) => embeddedCallerTask(setup.env, t)),
  maxTokens: 24,
  maxTurns: 3,
  evolution: {
    directions: ["budget", "loop-breaking"],
    rounds: 1,
    candidatesPerRound: 2,
    trials: 1,
    poolSize: 2,
    repairMargin: 0,
  },
});

describe("a pool evolved for the caller's environment (issue 55, item 4)", () => {
  it("POST /v1/pools {evolve} runs as a job at the caller's endpoint in its environment, metered; the pool is the key's own; a rescue routes in it", async () => {
    const registered = await call(trainer, "POST", "/v1/policy-endpoints", { ...endpointOf(worker.url), id: "mine" });
    expect(registered.status).toBe(201);
    // Quoted as it would be asked for: at most 3 × 1 × (1 + 2 × 1 × 2) rollouts.
    const quoted = await (await call(trainer, "POST", "/v1/quotes", { pool: evolveRequest() })).json();
    expect(quoted).toMatchObject({ rollouts: 15, caps: { plannedRollouts: 15 } });
    // Act: ask for the evolution, then poll it.
    const accepted = await call(trainer, "POST", "/v1/pools", { evolve: evolveRequest() });
    expect(accepted.status).toBe(202);
    const job = await accepted.json();
    expect(job).toMatchObject({
      id: expect.stringMatching(/^pev_/),
      status: "queued",
      weightVersion: 0,
      quote: { rollouts: 15 },
    });
    let status = job;
    const seen = new Set<string>([job.status]);
    for (let i = 0; i < 600 && !["done", "failed"].includes(status.status); i++) {
      await new Promise((r) => setTimeout(r, 200));
      status = await (await call(trainer, "GET", `/v1/pools/evolutions/${job.id}`)).json();
      seen.add(status.status);
    }
    // Assess: done, the pool stored under the job's id with its siblings and its owner.
    expect(status.error).toBeNull();
    expect(status).toMatchObject({
      status: "done",
      attempts: 1,
      outcome: { proposer: "embedded-mutation" },
      pool: { id: job.id, owner: "k-trainer" },
    });
    expect([...seen]).toContain("done");
    const pool = status.pool;
    expect(pool.siblings.length).toBeGreaterThanOrEqual(1);
    expect(pool.siblings.every((s: { provenance: { parent: string } }) => s.provenance.parent === "h0")).toBe(true);
    // Every rollout ran at the caller's policy (tokens sampled there) and was metered to the key and the job.
    const rollouts = status.usage.rollouts;
    expect(rollouts).toBeGreaterThanOrEqual(3);
    expect(rollouts).toBeLessThanOrEqual(15);
    expect(status.usage.policyTokens).toBeGreaterThan(0);
    expect(await stack.deps.meter.job(job.id)).toMatchObject({ rollouts, policyTokens: status.usage.policyTokens });
    // Its status carries its quote beside what was metered under it (issue 70 item 2): the charge covers the cost.
    expect(status.quote.rollouts).toBeGreaterThanOrEqual(rollouts);
    expect(status.actual.usage.rollouts).toBe(rollouts);
    expect(status.actual.chargeUsd).toBeGreaterThanOrEqual(status.actual.costOfGoods.totalUsd);
    // A rescue names the pool: routed among its siblings, run at the caller's endpoint in its environment.
    const task = inst.train.find((t) => t.tags.length > 0)!;
    const rescue = (key: string) =>
      call(key, "POST", "/v1/rescues", {
        poolId: job.id,
        failureTags: ["incomplete-results"],
        k: 1,
        rolloutsPerHarness: 2,
        caller: {
          endpoint: "mine",
          environment: { kind: "openenv", url: envServer.url },
          task: embeddedCallerTask(setup.env, task),
          system: "Solve the task with the tools.",
          maxTokens: 24,
        },
      });
    const started = await rescue(trainer);
    expect(started.status).toBe(202);
    const { id: rescueId, chosen, expected } = await started.json();
    expect(chosen.every((h: string) => pool.siblings.some((s: { id: string }) => s.id === h))).toBe(true);
    let done = { status: "running" } as { status: string; completed?: number };
    for (let i = 0; i < 240 && done.status === "running"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      done = await (await call(trainer, "GET", `/v1/rescues/${rescueId}`)).json();
    }
    expect(done).toMatchObject({ status: "done", completed: expected });
    // Another key sees neither the job nor the pool, and cannot route in it.
    expect((await call(other, "GET", `/v1/pools/evolutions/${job.id}`)).status).toBe(404);
    expect((await call(other, "GET", `/v1/pools/${job.id}`)).status).toBe(404);
    expect((await (await call(other, "GET", "/v1/pools")).json()).pools.map((p: { id: string }) => p.id)).not.toContain(
      job.id,
    );
    // Even with an endpoint of its own registered under the same name: the pool is not there for it.
    expect((await call(other, "POST", "/v1/policy-endpoints", { ...endpointOf(worker.url), id: "mine" })).status).toBe(
      201,
    );
    const refused = await (await rescue(other)).json();
    expect(refused.error).toMatchObject({ code: "NOT_FOUND", message: `pool "${job.id}" not found` });
  }, 300_000);

  it("checks before anything is queued: the scope its body needs, the fields, the key's own endpoint", async () => {
    const forbidden = await call(poolsOnly, "POST", "/v1/pools", { evolve: evolveRequest() });
    expect([forbidden.status, (await forbidden.json()).error.message]).toEqual([
      403,
      "this API key lacks the scope rescues",
    ]);
    const bad = await (
      await call(trainer, "POST", "/v1/pools", {
        evolve: { ...evolveRequest(), devTasks: [], evolution: { rounds: 9 } },
      })
    ).json();
    expect(bad.error.code).toBe("VALIDATION_FAILED");
    expect(bad.error.issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^evolve\.devTasks: /),
        expect.stringMatching(/^evolve\.evolution\.rounds: /),
      ]),
    );
    // An endpoint name this key never registered.
    const notMine = await call(other, "POST", "/v1/pools", {
      evolve: { ...evolveRequest(), endpoint: "never-registered" },
    });
    expect([notMine.status, (await notMine.json()).error.code]).toEqual([404, "NOT_FOUND"]);
  }, 60_000);
});
