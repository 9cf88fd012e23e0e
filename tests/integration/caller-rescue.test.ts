import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { systemClock } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { TokenPolicyClient, startOpenEnvServer } from "@harness-s/adapters";
import { defaultEmbeddedSettings, embeddedSetup, embeddedCallerTask } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local/stack";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { ensureWorkerVenv, startPolicyWorker } from "../../packages/cli/src/policy-worker.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";

// Issue 31, acceptance 1: elastic rescue for another trainer, end to end on loopback. The tiny
// policy worker is the caller's policy (a policy the caller created there), env-serve the
// caller's environment (OpenEnv protocol), the service the local stack (DynamoDB Local, fauxqs,
// the dispatch worker). The rescue's token rows re-score at the caller's policy, and every
// harness insertion sits at mask 0.
const WORKER_TOKEN = "caller-secret-token";
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let worker: Awaited<ReturnType<typeof startPolicyWorker>>;
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let secret: string;
let other: string;

beforeAll(async () => {
  inst = await setup.instance(1);
  await ensureWorkerVenv();
  [worker, envServer] = await Promise.all([
    startPolicyWorker({ model: "tiny", token: WORKER_TOKEN }),
    builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }).then((o) => startOpenEnvServer(o)),
  ]);
  // The caller's own policy at its worker: a LoRA policy at version 0.
  await new TokenPolicyClient(worker.url, { token: WORKER_TOKEN, clock: systemClock }).create("trainer-policy", {
    base_model: "tiny",
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj"] },
    seed: 3,
  });
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst);
  secret = await addKey(stack.deps, "k-trainer", ["rescues"]);
  other = await addKey(stack.deps, "k-other", ["rescues"]);
  api = await startApi(stack.deps);
}, 600_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await envServer?.close();
  await worker?.stop();
}, 60_000);

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, ...(body ? { body: JSON.stringify(body) } : {}) });

describe("a rescue with the caller's own policy and environment", () => {
  it("samples the caller's policy in its environment under the routed siblings, and returns token rows that re-score there, insertions at mask 0", async () => {
    // Prepare: register the endpoint (its bearer token as the secret header).
    const registered = await call(secret, "POST", "/v1/policy-endpoints", {
      id: "my-worker",
      kind: "protocol-v2",
      url: worker.url,
      policy: "trainer-policy",
      secretHeader: { name: "authorization", value: `Bearer ${WORKER_TOKEN}` },
    });
    expect(registered.status).toBe(201);
    const task = inst.train.find((t) => t.tags.length > 0)!;
    // Act: rescue a failed group of that task.
    const started = await call(secret, "POST", "/v1/rescues", {
      poolId: inst.evolution.pool.id,
      failureTags: ["incomplete-results"],
      k: 2,
      rolloutsPerHarness: 2,
      caller: {
        endpoint: "my-worker",
        environment: { kind: "openenv", url: envServer.url },
        task: embeddedCallerTask(setup.env, task),
        system: "Solve the task with the tools.",
        maxTokens: 24,
      },
    });
    expect(started.status).toBe(202);
    const { id, chosen, expected } = await started.json();
    expect(chosen).toHaveLength(2);
    let status = { status: "running" };
    for (let i = 0; i < 240 && status.status === "running"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      status = await (await call(secret, "GET", `/v1/rescues/${id}`)).json();
    }
    expect(status).toMatchObject({ status: "done", completed: expected });
    const page = await (await call(secret, "GET", `/v1/rescues/${id}/trajectories?limit=64`)).json();
    // Assess: one row per rollout, at the pinned version, under the routed harnesses.
    expect(page.next).toBeNull();
    expect(page.trajectories).toHaveLength(expected);
    expect(new Set(page.trajectories.map((t: { harness_id: string }) => t.harness_id))).toEqual(new Set(chosen));
    const scorer = new TokenPolicyClient(worker.url, { token: WORKER_TOKEN, clock: systemClock });
    let trained = 0;
    for (const t of page.trajectories) {
      expect(t.weight_version).toBe(0);
      expect([t.completion_ids.length, t.logprobs.length]).toEqual([t.loss_mask.length, t.loss_mask.length]);
      const ids = [...t.prompt_ids, ...t.completion_ids];
      const [rescored] = await scorer.score("trainer-policy", { sequences: [{ ids }] });
      const tail = rescored!.slice(t.prompt_ids.length);
      // Every id at mask 1 was sampled: its re-scored log-probability is the one returned for it.
      // (An inserted id at mask 1 would carry 0 there and a negative score: this fails.)
      t.loss_mask.forEach((m: number, j: number) => {
        if (m === 1) expect(Math.abs(tail[j]! - t.logprobs[j]!)).toBeLessThan(1e-4);
        else expect(t.logprobs[j]).toBe(0);
      });
      trained += t.loss_mask.filter((m: number) => m === 1).length;
    }
    expect(trained).toBeGreaterThan(0);
    // Another key reads none of it.
    expect((await call(other, "GET", `/v1/rescues/${id}/trajectories`)).status).toBe(404);
  }, 180_000);
});
