import { fileURLToPath } from "node:url";
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
import { startServedStub } from "../served-stub.ts";

// Issue 31, acceptance 1: elastic rescue for another trainer, end to end on loopback. The tiny
// policy worker is the caller's policy (a policy the caller created there), env-serve the
// caller's environment (OpenEnv protocol), the service the local stack (DynamoDB Local, fauxqs,
// the dispatch worker). The rescue's token rows re-score at the caller's policy, and every
// harness insertion sits at mask 0.
// Issue 54, acceptance 1-2: the same rescue against the worker's vLLM and SGLang façade (its
// chat route rendering every request whole, as vLLM does) in each token mode, the version pinned
// by the served name `trainer-policy@v0`; and, with a chat template that is not append-only
// (packages/policy-worker/tests/templates/thinking-chatml.jinja), messages in gives segmented
// rows, each of which re-scores.
const WORKER_TOKEN = "caller-secret-token";
const THINKING_TEMPLATE = fileURLToPath(
  new URL("../../packages/policy-worker/tests/templates/thinking-chatml.jinja", import.meta.url),
);
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let worker: Awaited<ReturnType<typeof startPolicyWorker>>;
let thinking: Awaited<ReturnType<typeof startPolicyWorker>>;
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let secret: string;
let other: string;

beforeAll(async () => {
  inst = await setup.instance(1);
  await ensureWorkerVenv();
  [worker, thinking, envServer] = await Promise.all([
    startPolicyWorker({ model: "tiny", token: WORKER_TOKEN, tuning: { chatPrompts: "render" } }),
    startPolicyWorker({
      model: "tiny",
      token: WORKER_TOKEN,
      tuning: { chatPrompts: "render", chatTemplate: THINKING_TEMPLATE },
    }),
    builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }).then((o) =>
      startOpenEnvServer(o),
    ),
  ]);
  // The caller's own policy at its worker: a LoRA policy at version 0.
  for (const at of [worker, thinking])
    await new TokenPolicyClient(at.url, { token: WORKER_TOKEN, clock: systemClock }).create("trainer-policy", {
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
  await thinking?.stop();
}, 60_000);

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** How each case registers the worker: its kind and token mode, and what its rescue names of the version. */
const CASES = [
  { name: "protocol v2", registration: { kind: "protocol-v2" }, pin: {} },
  {
    name: "vLLM messages in",
    registration: { kind: "vllm", mode: "chat-token-ids" },
    pin: { weightVersion: 0, servedModel: "trainer-policy@v0" },
  },
  {
    name: "vLLM tokens in",
    registration: { kind: "vllm", mode: "completions-ids" },
    pin: { weightVersion: 0, servedModel: "trainer-policy@v0" },
  },
  {
    name: "vLLM tokens in, /inference/v1/generate",
    registration: { kind: "vllm", mode: "inference-generate" },
    pin: { weightVersion: 0, servedModel: "trainer-policy@v0" },
  },
  {
    name: "SGLang generate",
    registration: { kind: "sglang", mode: "sglang-generate" },
    pin: { weightVersion: 0, servedModel: "trainer-policy@v0" },
  },
  {
    name: "SGLang messages in, ids per choice",
    registration: { kind: "sglang" },
    pin: { weightVersion: 0, servedModel: "trainer-policy@v0" },
  },
] as const;

interface Row {
  harness_id: string;
  weight_version: number;
  prompt_ids: number[];
  completion_ids: number[];
  logprobs: number[];
  loss_mask: number[];
  segmented: boolean;
}

/**
 * Registers `url` as `id` (the model or policy `policy` there), rescues a failed group there pinned by `pin`, and
 * answers the rescue's start and its end.
 */
async function rescueSettled(
  url: string,
  id: string,
  registration: Record<string, unknown>,
  pin: Record<string, unknown>,
  policy = "trainer-policy",
) {
  // Prepare: register the endpoint (its bearer token as the secret header).
  const registered = await call(secret, "POST", "/v1/policy-endpoints", {
    id,
    url,
    policy,
    secretHeader: { name: "authorization", value: `Bearer ${WORKER_TOKEN}` },
    ...registration,
  });
  expect(registered.status).toBe(201);
  if ("mode" in registration) expect((await registered.json()).probe.mode).toBe(registration.mode);
  const task = inst.train.find((t) => t.tags.length > 0)!;
  // Act: rescue a failed group of that task.
  const started = await call(secret, "POST", "/v1/rescues", {
    poolId: inst.evolution.pool.id,
    failureTags: ["incomplete-results"],
    k: 2,
    rolloutsPerHarness: 2,
    caller: {
      endpoint: id,
      environment: { kind: "openenv", url: envServer.url },
      task: embeddedCallerTask(setup.env, task),
      system: "Solve the task with the tools.",
      maxTokens: 24,
      ...pin,
    },
  });
  expect(started.status).toBe(202);
  const { id: rescueId, chosen, expected } = await started.json();
  expect(chosen).toHaveLength(2);
  let status = { status: "running" } as {
    status: string;
    completed: number;
    failed: { code: string; reason: string }[];
  };
  for (let i = 0; i < 240 && status.status === "running"; i++) {
    await new Promise((r) => setTimeout(r, 250));
    status = await (await call(secret, "GET", `/v1/rescues/${rescueId}`)).json();
  }
  return { rescueId, chosen, expected, status };
}

/** A rescue of `c` at `at` that completes every slot, and its rows. */
async function rescueAt(at: { url: string }, id: string, c: (typeof CASES)[number]) {
  const { rescueId, chosen, expected, status } = await rescueSettled(at.url, id, c.registration, c.pin);
  expect(status).toMatchObject({ status: "done", completed: expected });
  const page = await (await call(secret, "GET", `/v1/rescues/${rescueId}/trajectories?limit=64`)).json();
  expect(page.next).toBeNull();
  return { rescueId, chosen, expected, rows: page.trajectories as Row[] };
}

/**
 * Every id at mask 1 re-scores at the worker as returned (an inserted id at mask 1 would carry 0 there and a negative
 * score: this fails); every other id carries 0.
 */
async function expectRescored(at: { url: string }, rows: readonly Row[]): Promise<number> {
  const scorer = new TokenPolicyClient(at.url, { token: WORKER_TOKEN, clock: systemClock });
  let trained = 0;
  for (const t of rows) {
    expect(t.weight_version).toBe(0);
    expect([t.completion_ids.length, t.logprobs.length]).toEqual([t.loss_mask.length, t.loss_mask.length]);
    const ids = [...t.prompt_ids, ...t.completion_ids];
    const [rescored] = await scorer.score("trainer-policy", { sequences: [{ ids }] });
    const tail = rescored!.slice(t.prompt_ids.length);
    t.loss_mask.forEach((m: number, j: number) => {
      if (m === 1) expect(Math.abs(tail[j]! - t.logprobs[j]!)).toBeLessThan(1e-4);
      else expect(t.logprobs[j]).toBe(0);
    });
    trained += t.loss_mask.filter((m: number) => m === 1).length;
  }
  return trained;
}

describe("a rescue with the caller's own policy and environment", () => {
  for (const c of CASES)
    it(`${c.name}: samples the caller's policy in its environment under the routed siblings, and returns token rows that re-score there, insertions at mask 0`, async () => {
      const { rescueId, chosen, expected, rows } = await rescueAt(
        worker,
        `w-${c.registration.kind}-${"mode" in c.registration ? c.registration.mode : "v2"}`,
        c,
      );
      // Assess: at least one row per rollout, at the pinned version, under the routed harnesses.
      if (c.registration.kind === "protocol-v2") expect(rows).toHaveLength(expected);
      else expect(rows.length).toBeGreaterThanOrEqual(expected);
      expect(new Set(rows.map((t) => t.harness_id))).toEqual(new Set(chosen));
      expect(await expectRescored(worker, rows)).toBeGreaterThan(0);
      // Tokens in never comes apart: the episode's ids go back as they are.
      if (c.registration.kind === "protocol-v2" || !c.name.includes("messages in"))
        expect(rows.every((t) => !t.segmented)).toBe(true);
      // Another key reads none of it.
      expect((await call(other, "GET", `/v1/rescues/${rescueId}/trajectories`)).status).toBe(404);
    }, 180_000);

  // Issue 69 item 3: H0's context at the served kinds, re-scored by the façade's prompt log-probabilities (vLLM's
  // prompt_logprobs, SGLang's input_token_logprobs) and checked against its own /score.
  for (const c of [CASES[2], CASES[5]])
    it(`${c.name}: context=base rows re-score at the worker within 1e-4`, async () => {
      const { rescueId, rows: sampled } = await rescueAt(worker, `b-${c.registration.kind}`, c);
      const res = await call(secret, "GET", `/v1/rescues/${rescueId}/trajectories?limit=64&context=base`);
      expect(res.status).toBe(200);
      const rows = (await res.json()).trajectories as Row[];
      expect(rows.length).toBeGreaterThan(0);
      // The siblings' notes made their prompts read otherwise: H0's rows are other ids, not the sampled ones again.
      const prompts = (rs: Row[]) => JSON.stringify(rs.map((r) => r.prompt_ids));
      expect(prompts(rows)).not.toBe(prompts(sampled));
      expect(await expectRescored(worker, rows)).toBeGreaterThan(0);
    }, 180_000);

  it("a chat template that is not append-only, messages in: the rollouts come back as segmented rows, each of which re-scores", async () => {
    const { expected, rows } = await rescueAt(thinking, "thinking-chat", CASES[1]);
    // Each row is what its completions were sampled after (without the prefix check this fails).
    expect(await expectRescored(thinking, rows)).toBeGreaterThan(0);
    expect(rows.length).toBeGreaterThan(expected);
    expect(rows.some((t) => t.segmented)).toBe(true);
  }, 180_000);
});

// Issue 54, acceptance 3: a weight version pinned by the name that serves it.
describe("a rescue pinned by its served model", () => {
  it("a version the worker does not hold: every slot fails SERVED_MODEL_MISMATCH at once (vLLM's 404, SGLang's 400 for an adapter not loaded)", async () => {
    for (const c of CASES.filter((c) => c.registration.kind !== "protocol-v2")) {
      const { expected, status } = await rescueSettled(
        worker.url,
        `v1-${c.registration.kind}-${"mode" in c.registration ? c.registration.mode : ""}`,
        c.registration,
        {
          weightVersion: 1,
          servedModel: "trainer-policy@v1",
        },
      );
      expect(status, c.name).toMatchObject({ status: "failed", completed: 0 });
      expect(status.failed).toHaveLength(expected);
      for (const f of status.failed) expect(f.code, `${c.name}: ${f.reason}`).toBe("SERVED_MODEL_MISMATCH");
    }
  }, 180_000);

  it("a server that answers as another model mid-rescue: each slot it answered so fails SERVED_MODEL_MISMATCH, every row kept is of the pinned version", async () => {
    const tool = setup.env.tools(inst.train.find((t) => t.tags.length > 0)!).find((a) => a !== "submit")!;
    const stub = await startServedStub({
      models: ["base", "base@v3"],
      script: () => `<tool_call>{"name": "${tool}", "arguments": {}}</tool_call>`,
      // From its 12th sample on, the server answers as the next step's model (a trainer that moved the name on).
      answerAs: (asked, nth) => (nth >= 12 ? "base@v4" : asked),
    });
    try {
      const { rescueId, expected, status } = await rescueSettled(
        stub.url,
        "switching",
        { kind: "vllm", mode: "completions-ids" },
        { weightVersion: 3, servedModel: "base@v3", maxTokens: 96 },
        "base",
      );
      expect(status.status).toBe("failed");
      expect(status.failed.length).toBeGreaterThan(0);
      expect(status.completed + status.failed.length).toBe(expected);
      for (const f of status.failed) expect(f.code, f.reason).toBe("SERVED_MODEL_MISMATCH");
      const page = await (await call(secret, "GET", `/v1/rescues/${rescueId}/trajectories?limit=64`)).json();
      expect(page.trajectories.length).toBe(status.completed);
      for (const t of page.trajectories) expect(t.weight_version).toBe(3);
    } finally {
      await stub.close();
    }
  }, 180_000);
});
