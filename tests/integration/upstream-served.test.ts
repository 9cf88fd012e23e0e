import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { CallerSource } from "@harness-s/core/dispatch";
import { RegisterPolicyEndpoint, registerPolicyEndpoint } from "@harness-s/core/callers";
import { CallerPolicyRunners, ENDPOINT_KIND_ADAPTERS } from "@harness-s/adapters/policy";
import { HttpEndpointProber, outboundFetch } from "@harness-s/adapters/net";
import { freePort } from "@harness-s/adapters/local";
import { MemoryPolicyEndpointStore } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedCallerTask, embeddedSetup } from "@harness-s/envs";
import { builtinEnvironments } from "../../functions/embedded-tasks.ts";
import { score, tokenize } from "../served-stub.ts";
import { startSglangStandIn } from "../upstream/sglang.ts";
import { startVllmStandIn } from "../upstream/vllm.ts";

// Issue 69, items 1, 2 and 4: rescues against stand-ins written from vLLM's and SGLang's own source
// (tests/upstream/, each behaviour citing its file and commit), not against our worker's façade. SGLang: ids per
// choice, no /tokenize of messages, its weight version in meta_info; vLLM: a base model answered by its first served
// name, a missing route told from a missing model.
const setup = embeddedSetup(defaultEmbeddedSettings);
const environments = builtinEnvironments();
let inst: SeedInstance;
const servers: { close: () => Promise<void> }[] = [];
beforeAll(async () => {
  inst = await setup.instance(1);
}, 120_000);
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const tool = () => setup.env.tools(inst.train.find((t) => t.tags.length > 0)!).find((a) => a !== "submit")!;
/** A tool call each turn but the third, which submits. */
const script = (nth: number) =>
  `<tool_call>{"name": "${nth % 3 === 2 ? "submit" : tool()}", "arguments": {}}</tool_call>`;

async function register(
  url: string,
  kind: "vllm" | "sglang" | "protocol-v2",
  policy: string,
  mode?: RegisterPolicyEndpoint["mode"],
) {
  const endpoints = new MemoryPolicyEndpointStore();
  const prober = new HttpEndpointProber({ allowLoopback: true }, systemClock);
  const req = RegisterPolicyEndpoint.parse({ id: "e1", url, policy, kind, ...(mode ? { mode } : {}) });
  const view = await registerPolicyEndpoint(req, "k1", { endpoints, prober, clock: systemClock });
  return { endpoints, view };
}

async function rescue(endpoints: MemoryPolicyEndpointStore, servedModel: string, weightVersion = 3) {
  const callers = new CallerPolicyRunners({
    endpoints,
    outbound: { allowLoopback: true },
    clock: systemClock,
    builtin: environments,
  });
  const task = inst.train.find((t) => t.tags.length > 0)!;
  const caller = CallerSource.parse({
    kind: "caller",
    keyId: "k1",
    endpoint: "e1",
    environment: { kind: "builtin", id: "embedded" },
    task: embeddedCallerTask(setup.env, task),
    system: "Solve the task with the tools.",
    maxTokens: 200,
    weightVersion,
    servedModel,
  });
  const run = await callers.runner(caller, () => {});
  const sibling = inst.evolution.pool.siblings.find((s) => s.id.includes("recon"))!;
  const rollout = await run(task, sibling, 11);
  const [rows] = await callers.datums(caller, [rollout], "sampled");
  return { rollout, rows, base: () => callers.datums(caller, [rollout], "base").then(([r]) => r) };
}

/** Every trained id carries the toy model's log-probability within 1e-4; every other id 0. */
function expectRescored(rows: Awaited<ReturnType<typeof rescue>>["rows"]) {
  let trained = 0;
  for (const d of rows!.datums) {
    const rescored = score(d.ids);
    d.loss_mask.forEach((m, j) => {
      if (m === 1) expect(Math.abs(rescored[j]! - d.behaviour_logprobs[j]!)).toBeLessThan(1e-4);
    });
    trained += d.loss_mask.filter((m) => m === 1).length;
  }
  expect(trained).toBeGreaterThan(0);
}

describe("SGLang as it answers (tests/upstream/sglang.ts)", () => {
  it("registers by chat completions with ids per choice, never /tokenize; rows re-score within 1e-4; the base model and the version named and checked", async () => {
    const server = await startSglangStandIn({ script, weightVersion: "3" });
    servers.push(server);
    const { endpoints, view } = await register(server.url, "sglang", "base");
    expect(view.probe.mode).toBe("chat-token-ids");
    const { rollout, rows } = await rescue(endpoints, "base");
    expect(rollout.steps.filter((s) => s.tokens).length).toBeGreaterThan(1);
    expectRescored(rows);
    const chats = server.requests.filter((r) => r.path === "/v1/chat/completions");
    expect(server.requests.some((r) => r.path.includes("tokenize"))).toBe(false);
    for (const r of chats) {
      expect(r.body).toMatchObject({ model: "base", return_prompt_token_ids: true, return_token_ids: true });
      expect(r.body.lora_path).toBeUndefined();
    }
  });

  it("an adapter is named by lora_path; a server updated in place to another weight version fails the rollout STALE_POLICY_VERSION", async () => {
    const server = await startSglangStandIn({ script, weightVersion: "3", adapters: ["pol@v3"] });
    servers.push(server);
    const { endpoints } = await register(server.url, "sglang", "base");
    await rescue(endpoints, "pol@v3");
    const chats = server.requests.filter((r) => r.path === "/v1/chat/completions").slice(1);
    expect(chats.every((r) => r.body.lora_path === "pol@v3")).toBe(true);
    server.setWeightVersion("4");
    await expect(rescue(endpoints, "base")).rejects.toMatchObject({ code: "STALE_POLICY_VERSION" });
  });

  it("its current version is /get_model_info's weight_version, where it is a whole number", async () => {
    const server = await startSglangStandIn({ script, weightVersion: "7" });
    servers.push(server);
    const { endpoints } = await register(server.url, "sglang", "base");
    const record = (await endpoints.get("k1", "e1"))!;
    const transport = {
      fetch: outboundFetch({ allowLoopback: true }),
      clock: systemClock,
      timeoutMs: 5_000,
    };
    expect(await ENDPOINT_KIND_ADAPTERS.sglang.currentVersion(record, transport)).toBe(7);
    server.setWeightVersion("default");
    await expect(ENDPOINT_KIND_ADAPTERS.sglang.currentVersion(record, transport)).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
  });

  it("an SGLang older than per-choice ids is refused with ENDPOINT_NO_TOKEN_IDS naming what it lacks; tokens in through its text-only /tokenize is refused too", async () => {
    const older = await startSglangStandIn({ script, older: true });
    servers.push(older);
    await expect(register(older.url, "sglang", "base")).rejects.toMatchObject({
      code: "ENDPOINT_NO_TOKEN_IDS",
      message: expect.stringContaining("in its choice, as SGLang does"),
    });
    await expect(register(older.url, "sglang", "base", "sglang-generate")).rejects.toMatchObject({
      code: "ENDPOINT_PROBE_FAILED",
      message: expect.stringContaining("/tokenize"),
    });
  });
});

describe("context=base at served kinds: re-scored in H0's context by the server's prompt log-probabilities", () => {
  /** Rows in H0's context: no sibling hint in them, every trained id re-scores within 1e-4. */
  async function expectBase(rescued: Awaited<ReturnType<typeof rescue>>) {
    const rows = await rescued.base();
    expect(rows!.datums.length).toBeGreaterThan(0);
    expectRescored(rows);
    const sampledIds = rescued.rows!.datums.flatMap((d) => d.ids);
    const baseIds = rows!.datums.flatMap((d) => d.ids);
    expect(baseIds).not.toEqual(sampledIds);
    const hint = [...tokenize("suggested next tool")];
    const has = (ids: number[]) => ids.some((_, at) => hint.every((id, k) => ids[at + k] === id));
    expect(has(sampledIds), "the sibling's hints are in the sampled rows").toBe(true);
    expect(has(baseIds), "and not in H0's").toBe(false);
  }

  it("vllm (tokens in): /tokenize renders H0's conversation, /v1/completions' prompt_logprobs score it", async () => {
    const server = await startVllmStandIn({ servedNames: ["base"], script });
    servers.push(server);
    const { endpoints } = await register(server.url, "vllm", "base", "completions-ids");
    await expectBase(await rescue(endpoints, "base"));
    expect(server.requests.some((r) => r.body.prompt_logprobs === 0)).toBe(true);
  });

  it("sglang: its chat completions render H0's conversation, /generate's input_token_logprobs score it", async () => {
    const server = await startSglangStandIn({ script, weightVersion: "3" });
    servers.push(server);
    const { endpoints } = await register(server.url, "sglang", "base");
    await expectBase(await rescue(endpoints, "base"));
    expect(server.requests.some((r) => r.path === "/generate" && r.body.logprob_start_len === 0)).toBe(true);
  });
});

describe("vLLM's model names and routes (tests/upstream/vllm.ts)", () => {
  for (const mode of ["completions-ids", "inference-generate", "chat-token-ids"] as const)
    it(`${mode}: --served-model-name a b, a rescue naming b is answered as a and accepted; rows re-score within 1e-4`, async () => {
      const server = await startVllmStandIn({ servedNames: ["a", "b"], script, withModel: true });
      servers.push(server);
      const { endpoints, view } = await register(server.url, "vllm", "b", mode);
      expect(view.probe.servedNames).toEqual(["a", "b"]);
      const { rows } = await rescue(endpoints, "b");
      expectRescored(rows);
    });

  it("an adapter answers by its own name; a name the server does not serve is SERVED_MODEL_MISMATCH", async () => {
    const server = await startVllmStandIn({ servedNames: ["a", "b"], adapters: ["pol@v3"], script });
    servers.push(server);
    const { endpoints } = await register(server.url, "vllm", "a", "chat-token-ids");
    await rescue(endpoints, "pol@v3");
    await expect(rescue(endpoints, "pol@v9")).rejects.toMatchObject({ code: "SERVED_MODEL_MISMATCH" });
  });

  it("a missing route (an older vLLM without /inference/v1/generate) and a missing model give different codes", async () => {
    const older = await startVllmStandIn({ servedNames: ["a"], script, generate: false });
    servers.push(older);
    await expect(register(older.url, "vllm", "a", "inference-generate")).rejects.toMatchObject({
      code: "ENDPOINT_ROUTE_MISSING",
    });
    await expect(register(older.url, "vllm", "zzz", "completions-ids")).rejects.toMatchObject({
      code: "SERVED_MODEL_MISMATCH",
    });
    // Unasked, the probe goes on past the missing route to a mode the server has.
    const { view } = await register(older.url, "vllm", "a");
    expect(view.probe.mode).toBe("completions-ids");
  });
});

// Issue 70: a refused connection at registration is said as such, never as an exception class name ("TypeError").
describe("an endpoint that refuses the connection", () => {
  it.each(["protocol-v2", "vllm", "sglang"] as const)("%s: the probe says the connection was refused", async (kind) => {
    const port = await freePort();
    const refused = await register(`http://127.0.0.1:${port}`, kind, "p").catch((err: Error) => err);
    expect((refused as Error).message).toMatch(/could not connect: connection refused/);
    expect((refused as Error).message).not.toMatch(/TypeError/);
  });
});
