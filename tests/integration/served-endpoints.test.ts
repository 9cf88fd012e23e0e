import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock, type Rollout } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { CallerSource, type RolloutRows } from "@harness-s/core/dispatch";
import { RegisterPolicyEndpoint, registerPolicyEndpoint } from "@harness-s/core/callers";
import { CallerPolicyRunners, turnText } from "@harness-s/adapters/policy";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import { MemoryPolicyEndpointStore } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedCallerTask, embeddedSetup } from "@harness-s/envs";
import { builtinEnvironments } from "../../functions/embedded-tasks.ts";
import { score, startServedStub, tokenize, type StubOptions } from "../served-stub.ts";

// Issue 54, items 1-3, against a stand-in server (tests/served-stub.ts) whose toy model re-scores
// exactly: each token mode samples a rollout in the embedded environment under a sibling harness
// (its notes are insertions), and every row's sampled ids carry the log-probabilities the model
// gives them there, every insertion at mask 0; a chat template that rewrites earlier turns gives
// segmented rows, each exact; a reply from another served model fails the turn.
const setup = embeddedSetup(defaultEmbeddedSettings);
const environments = builtinEnvironments();
let inst: SeedInstance;
const stubs: Awaited<ReturnType<typeof startServedStub>>[] = [];

beforeAll(async () => {
  inst = await setup.instance(1);
}, 120_000);
afterEach(async () => {
  await Promise.all(stubs.splice(0).map((s) => s.close()));
});

/** A tool call of each turn but the last, which submits; each with a <think> block first. */
const calls = (tool: string, turns: number) => (nth: number) =>
  `<think>step ${nth}</think><tool_call>{"name": "${nth + 1 >= turns ? "submit" : tool}", "arguments": {}}</tool_call>`;

async function rescueOnce(
  stub: StubOptions,
  registration: { kind: "vllm" | "sglang" | "openai-chat"; mode?: RegisterPolicyEndpoint["mode"] },
  servedModel = "base@v3",
) {
  const server = await startServedStub(stub);
  stubs.push(server);
  const endpoints = new MemoryPolicyEndpointStore();
  const prober = new HttpEndpointProber({ allowLoopback: true }, systemClock);
  const url = registration.kind === "openai-chat" ? `${server.url}/v1` : server.url;
  const req = RegisterPolicyEndpoint.parse({ id: "e1", url, policy: "base", ...registration });
  const view = await registerPolicyEndpoint(req, "k1", { endpoints, prober, clock: systemClock });
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
    weightVersion: 3,
    servedModel,
  });
  const spent = { policyTokens: 0 };
  const run = await callers.runner(caller, (s) => (spent.policyTokens += s.policyTokens));
  // A sibling that inserts hints into the turns (its insertions must sit at mask 0).
  const sibling = inst.evolution.pool.siblings.find((s) => s.id.includes("recon"))!;
  const rollout = await run(task, sibling, 11);
  const [rows] = await callers.datums(caller, [rollout], "sampled");
  return { server, view, rollout, rows, spent };
}

/**
 * Every id at mask 1 carries the toy model's log-probability there; every other id 0; each harness note sits at mask 0.
 */
function expectExact(rows: RolloutRows, rollout: Rollout) {
  let trained = 0;
  for (const d of rows.datums) {
    const rescored = score(d.ids);
    d.loss_mask.forEach((m, j) => {
      if (m === 1) expect(Math.abs(rescored[j]! - d.behaviour_logprobs[j]!)).toBeLessThan(1e-9);
      else expect(d.behaviour_logprobs[j]).toBe(0);
    });
    trained += d.loss_mask.filter((m) => m === 1).length;
  }
  expect(trained).toBeGreaterThan(0);
  // Each turn's message (the environment's text with the harness's notes and hints) sits at mask 0.
  const inserted = rollout.steps.filter((s) => s.tokens).map((s) => turnText(s.observation));
  expect(
    inserted.some((t) => t.includes("suggested next tool")),
    "the sibling harness inserted hints",
  ).toBe(true);
  for (const text of inserted) {
    const ids = tokenize(text);
    const hits = rows.datums.flatMap((d) =>
      d.ids.flatMap((_, at) =>
        ids.every((id, k) => d.ids[at + k] === id) ? [d.loss_mask.slice(at, at + ids.length)] : [],
      ),
    );
    expect(hits.length, text).toBeGreaterThan(0);
    for (const mask of hits) expect(mask.every((m) => m === 0)).toBe(true);
  }
}

const MODES = [
  { kind: "vllm", mode: "completions-ids" },
  { kind: "vllm", mode: "inference-generate" },
  { kind: "vllm", mode: "chat-token-ids" },
  { kind: "sglang", mode: "sglang-generate" },
  { kind: "openai-chat", mode: "chat-token-ids" },
] as const;

describe("a rescue's rollout at a served endpoint, in each token mode", () => {
  for (const { kind, mode } of MODES)
    it(`${kind} ${mode}: rows re-score exactly, insertions at mask 0, the version pinned by the served model`, async () => {
      const tool = setup.env.tools(inst.train.find((t) => t.tags.length > 0)!).find((a) => a !== "submit")!;
      const { view, rollout, rows, server } = await rescueOnce(
        { models: ["base", "base@v3"], script: calls(tool, 3) },
        { kind, mode },
      );
      expect(view.probe.mode).toBe(mode);
      expect(rollout.policyVersion).toBe(3);
      expect(rollout.steps.filter((s) => s.tokens).length).toBeGreaterThan(1);
      expect(rows?.segmented).toBe(false);
      expect(rows!.datums).toHaveLength(1);
      expectExact(rows!, rollout);
      // Every sampling request named the served model (SGLang: its adapter, as lora_path).
      const sampled = server.requests
        .filter((r) => !["/tokenize", "/detokenize", "/v1/models"].includes(r.path))
        .slice(1);
      for (const r of sampled) expect(r.body.model ?? r.body.lora_path).toBe("base@v3");
    });

  it("the probe prefers tokens in, and takes messages in where the server has no /tokenize", async () => {
    const script = () => "hi";
    expect((await rescueOnce({ models: ["base", "base@v3"], script }, { kind: "vllm" })).view.probe.mode).toBe(
      "completions-ids",
    );
    expect(
      (await rescueOnce({ models: ["base", "base@v3"], script, missing: ["/tokenize"] }, { kind: "vllm" })).view.probe
        .mode,
    ).toBe("chat-token-ids");
    expect(
      (await rescueOnce({ models: ["base", "base@v3"], script, missing: ["/tokenize"] }, { kind: "sglang" })).view.probe
        .mode,
    ).toBe("chat-token-ids");
  });

  it("refuses a server that offers no token-exact mode (ENDPOINT_NOT_TOKEN_EXACT), naming each mode's answer", async () => {
    const failed = rescueOnce(
      { models: ["base"], script: () => "hi", missing: ["/tokenize"], chatTextOnly: true },
      { kind: "vllm" },
    );
    await expect(failed).rejects.toMatchObject({
      code: "ENDPOINT_NOT_TOKEN_EXACT",
      message: expect.stringMatching(/completions-ids.*inference-generate.*chat-token-ids/),
    });
    const chatOnly = rescueOnce({ models: ["base"], script: () => "hi", chatTextOnly: true }, { kind: "openai-chat" });
    await expect(chatOnly).rejects.toMatchObject({ code: "ENDPOINT_NO_TOKEN_IDS" });
  });
});

describe("a template that is not append-only", () => {
  it("messages in: every turn's prompt that does not extend the ids before it starts another row; each row re-scores exactly", async () => {
    const tool = setup.env.tools(inst.train.find((t) => t.tags.length > 0)!).find((a) => a !== "submit")!;
    // Plain content (no tool call) makes every later message a user message, so the template drops earlier <think>
    // blocks.
    const script = (nth: number) =>
      nth >= 3
        ? `<tool_call>{"name": "submit", "arguments": {}}</tool_call>`
        : `<think>step ${nth}</think>not yet ${tool}`;
    const { rollout, rows } = await rescueOnce(
      { models: ["base", "base@v3"], script, rewrites: true },
      { kind: "vllm", mode: "chat-token-ids" },
    );
    // Each row's ids are what its completions were sampled after (without the prefix check this fails).
    expectExact(rows!, rollout);
    expect(rows?.segmented).toBe(true);
    expect(rows!.datums.length).toBeGreaterThan(1);
  });

  it("tokens in: the episode's ids are sent back as they are, so the rollout is one exact row", async () => {
    const script = (nth: number) =>
      nth >= 3 ? `<tool_call>{"name": "submit", "arguments": {}}</tool_call>` : `<think>step ${nth}</think>not yet`;
    const { rollout, rows } = await rescueOnce(
      { models: ["base", "base@v3"], script, rewrites: true },
      { kind: "vllm", mode: "completions-ids" },
    );
    expect(rows?.segmented).toBe(false);
    expectExact(rows!, rollout);
  });
});

describe("weight versions pinned by the served model", () => {
  for (const mode of ["completions-ids", "chat-token-ids"] as const)
    it(`${mode}: a reply naming another model fails the rollout with SERVED_MODEL_MISMATCH; a model not served is the same code`, async () => {
      const switched = rescueOnce(
        {
          models: ["base", "base@v3"],
          script: () => "thinking",
          answerAs: (asked, nth) => (nth >= 2 ? "base@v4" : asked),
        },
        { kind: "vllm", mode },
      );
      await expect(switched).rejects.toMatchObject({
        code: "SERVED_MODEL_MISMATCH",
        message: expect.stringContaining("base@v4"),
      });
      const gone = rescueOnce({ models: ["base"], script: () => "thinking" }, { kind: "vllm", mode }, "base@v3");
      await expect(gone).rejects.toMatchObject({
        code: "SERVED_MODEL_MISMATCH",
        message: expect.stringContaining("HTTP 404"),
      });
    });
});
