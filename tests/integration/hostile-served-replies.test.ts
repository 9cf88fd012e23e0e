import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { SeedInstance } from "@harness-s/core/experiment";
import { startOpenEnvServer } from "@harness-s/adapters/openenv";
import { defaultEmbeddedSettings, embeddedSetup, embeddedCallerTask } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";
import { SERVED_REPLY, startHostileServed, type HostileServed, type ServedRoute } from "../hostile-served.ts";

// Issue 54, acceptance 4: hostile-policy-replies.test.ts's policy cases over the kinds that state
// no version: a vLLM endpoint sampled tokens in (/v1/completions), an SGLang one (/generate) and
// an OpenAI-compatible one (chat completions), each answering a rescue's sample with what can
// never succeed. Each case is one rescue of one slot against the local stack at the deployed
// visibility timeout: a permanent failure fails its slot at once with its code, the long poll
// wakes within 10 s of the reply that decided it, its trajectories answer 200 with no rows, and
// no secret the endpoint echoed reaches the status or the log.
const SECRET = "Bearer hostile-secret-5c1e9a3f7b";
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let served: Awaited<ReturnType<typeof startHostileServed>>;
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let key: string;
const logs: string[] = [];

/** Each hostile reply (by route where the wire differs), and the code its slot must fail with. */
const CASES: Record<string, { reply: (route: ServedRoute) => HostileServed; code: string; routes?: ServedRoute[] }> = {
  "ids-2^53": { reply: () => ({ parts: { ids: [2 ** 53], logprobs: [-0.5] } }), code: "POLICY_REPLY_INVALID" },
  "nan-logprobs": {
    reply: (route) => ({
      raw: JSON.stringify(
        SERVED_REPLY[route]({ promptIds: [1, 2], ids: [3, 4], logprobs: [-0.25, -0.5], model: "x" }),
      ).replace("-0.25", "NaN"),
      status: 200,
    }),
    code: "POLICY_REPLY_INVALID",
  },
  "lengths-differ": { reply: () => ({ parts: { ids: [3, 4], logprobs: [-0.5] } }), code: "POLICY_REPLY_INVALID" },
  "invalid-json": { reply: () => ({ raw: "{oops", status: 200 }), code: "POLICY_REPLY_INVALID" },
  "endless-body": { reply: () => ({ endless: true }), code: "POLICY_ENDPOINT_FAILED" },
  "500-forever": { reply: () => ({ raw: "upstream connection reset", status: 500 }), code: "POLICY_ENDPOINT_FAILED" },
  "negative-ids": {
    reply: () => ({ parts: { ids: [-1, -5, 7], logprobs: [-1, -1, -1] } }),
    code: "POLICY_REPLY_INVALID",
  },
  "positive-logprobs": { reply: () => ({ parts: { logprobs: [5.0, 1e308] } }), code: "POLICY_REPLY_INVALID" },
  "fractional-ids": { reply: () => ({ parts: { ids: [3.5, 4] } }), code: "POLICY_REPLY_INVALID" },
  // More ids in one turn than any context (2^18), in a reply under the 16 MiB a reply may carry.
  "300k-ids": {
    reply: () => ({ parts: { ids: Array(300_000).fill(5), logprobs: Array(300_000).fill(-0.5) } }),
    code: "POLICY_REPLY_INVALID",
  },
  "echoes-secret-400": { reply: () => ({ echoHeaders: 400 }), code: "POLICY_ENDPOINT_FAILED" },
  "echoes-secret-500": { reply: () => ({ echoHeaders: 500 }), code: "POLICY_ENDPOINT_FAILED" },
  "no-ids": {
    reply: () => ({ parts: { ids: null as unknown as unknown[] } }),
    code: "POLICY_REPLY_INVALID",
    routes: ["/v1/chat/completions", "/v1/completions"],
  },
  // vLLM's and OpenAI's replies name the model that answered; SGLang's name none.
  "another-model": {
    reply: () => ({ parts: { model: "another@v9" } }),
    code: "SERVED_MODEL_MISMATCH",
    routes: ["/v1/chat/completions", "/v1/completions"],
  },
  "model-not-served": {
    reply: () => ({
      json: { error: { message: "The model does not exist.", type: "NotFoundError", code: 404 } },
      status: 404,
    }),
    code: "SERVED_MODEL_MISMATCH",
    routes: ["/v1/chat/completions", "/v1/completions"],
  },
  "adapter-not-loaded": {
    reply: () => ({
      json: { error: { message: "The following requested LoRA adapters are not loaded: x" } },
      status: 400,
    }),
    code: "SERVED_MODEL_MISMATCH",
    routes: ["/generate"],
  },
};

/** The kinds, each sampled through one route. */
const KINDS = [
  { kind: "vllm", mode: "completions-ids", route: "/v1/completions" },
  { kind: "sglang", mode: "sglang-generate", route: "/generate" },
  { kind: "openai-chat", mode: "chat-token-ids", route: "/v1/chat/completions" },
] as const;

const endpointId = (kind: string, name: string) => `ep-${kind}-${name.replace(/[^A-Za-z0-9-]/g, "-")}`;
const call = (method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

beforeAll(async () => {
  inst = await setup.instance(1);
  [served, envServer] = await Promise.all([
    startHostileServed((name, route) => CASES[name]?.reply(route) ?? { parts: {} }),
    builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }).then((o) =>
      startOpenEnvServer(o),
    ),
  ]);
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst, { log: (line) => logs.push(line) });
  key = await addKey(stack.deps, "k-hostile-served", ["rescues"]);
  api = await startApi(stack.deps);
  for (const { kind, mode } of KINDS)
    for (const name of Object.keys(CASES)) {
      const url = kind === "openai-chat" ? `${served.url}/v1` : served.url;
      const res = await call("POST", "/v1/policy-endpoints", {
        id: endpointId(kind, name),
        kind,
        mode,
        url,
        policy: name,
        secretHeader: { name: "authorization", value: SECRET },
      });
      expect(res.status, await res.clone().text()).toBe(201);
    }
}, 180_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await Promise.all([served?.close(), envServer?.close()]);
}, 60_000);

/** One slot's rescue on `endpoint`, pinned at `<name>@v0`; what it ended as, and when the long poll saw it. */
async function rescueOnce(endpoint: string, name: string) {
  const res = await call("POST", "/v1/rescues", {
    poolId: inst.evolution.pool.id,
    harnesses: [inst.evolution.pool.base.id],
    rolloutsPerHarness: 1,
    caller: {
      endpoint,
      environment: { kind: "openenv", url: envServer.url },
      task: embeddedCallerTask(setup.env, inst.train[0]!),
      maxTokens: 16,
      weightVersion: 0,
      servedModel: `${name}@v0`,
    },
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const { id } = await res.json();
  let status = await (await call("GET", `/v1/rescues/${id}`)).json();
  for (let i = 0; i < 3 && status.status === "running"; i++)
    status = await (await call("GET", `/v1/rescues/${id}?wait=20&seen=0`)).json();
  const seenAt = Date.now();
  const trajectories = await call("GET", `/v1/rescues/${id}/trajectories`);
  return { status, seenAt, trajectories: { status: trajectories.status, body: await trajectories.json() } };
}

describe("a vLLM, SGLang or OpenAI-compatible endpoint that answers what can never succeed", () => {
  for (const { kind, mode, route } of KINDS)
    for (const [name, c] of Object.entries(CASES).filter(([, c]) => !c.routes || c.routes.includes(route)))
      it(`${kind} ${mode}, ${name}: the slot fails at once with ${c.code}, and its trajectories answer 200`, async () => {
        const out = await rescueOnce(endpointId(kind, name), name);
        const afterMs = out.seenAt - (served.repliedAt.get(name) ?? out.seenAt);
        expect(out.status).toMatchObject({ status: "failed", completed: 0, failed: [{ index: 0, code: c.code }] });
        expect(afterMs).toBeLessThan(10_000);
        expect(out.trajectories).toMatchObject({ status: 200, body: { trajectories: [] } });
        // Never the secret the endpoint echoed: not in the status.
        expect(JSON.stringify(out.status)).not.toContain("hostile-secret");
      }, 90_000);

  it("logged no secret a hostile endpoint echoed", () => {
    expect(logs.join("\n")).not.toContain("hostile-secret");
  });
});
