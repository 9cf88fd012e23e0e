import { describe, expect, it } from "vitest";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { createRng, systemClock, type Rollout, type TrajectoryStep } from "@harness-s/core";
import type { SampleResponseV2 } from "@harness-s/core/protocol";
import { INVALID_TOOL_CALL, NO_TOOL_CALL } from "@harness-s/adapters/llm";
import { TokenPolicyClient, TokenSampler, TokenTrainer } from "@harness-s/adapters/policy";
import { embeddedToolSchemas } from "@harness-s/envs";

const policy = new TokenTrainer(new TokenPolicyClient("http://127.0.0.1:1", { clock: systemClock }), {
  policyId: "unit",
  baseModel: "tiny",
  lora: { rank: 4, alpha: 8, targets: ["q_proj"] },
  seed: 1,
  system: "s",
  toolSchemas: embeddedToolSchemas,
});
const observation = {
  family: "app",
  tools: ["list", "submit"],
  event: "start",
  facts: [],
  taskTags: [],
  hints: [],
  baseHints: [],
  failedActions: [],
  turnsLeft: 3,
};
const step = (over: Partial<TrajectoryStep>): TrajectoryStep => ({
  observation,
  action: "list",
  logProb: -1,
  forced: false,
  intercepted: false,
  result: "ok",
  ...over,
});
const rollout = (steps: TrajectoryStep[]): Rollout => ({
  id: "r",
  taskId: "t",
  family: "app",
  harnessId: "h",
  policyVersion: 0,
  seed: 1,
  steps,
  reward: 1,
  success: true,
  failureTags: [],
  events: [],
  behaviours: {},
});
const options = {
  policyId: "unit",
  baseModel: "tiny",
  lora: { rank: 4, alpha: 8, targets: ["q_proj"] },
  seed: 1,
  system: "s",
  toolSchemas: embeddedToolSchemas,
};
/** A worker stand-in whose replay answers two turns and records each request. */
const replaying = () => {
  const replays: Record<string, unknown>[] = [];
  const client = {
    replay: async (_id: string, req: Record<string, unknown>) => {
      replays.push(req);
      return [
        { prompt_ids: [7, 7], logprobs: [-0.1, -0.2] },
        { prompt_ids: [8], logprobs: [-0.3, -0.3, -0.3] },
      ];
    },
  } as unknown as TokenPolicyClient;
  return { client, replays };
};
const settings = (maskIntercepted: boolean) => ({
  learningRate: 0.1,
  clipEpsilon: 0.2,
  klCoef: 0,
  epochs: 1,
  rescueContext: "as-generated" as const,
  maskIntercepted,
});

describe("TokenTrainer datums", () => {
  const steps = [
    step({ tokens: { promptIds: [1, 2, 3], completionIds: [10, 11], logprobs: [-0.5, -0.6], version: 0 } }),
    step({
      intercepted: true,
      result: "blocked:list",
      tokens: { promptIds: [4], completionIds: [12, 13, 14], logprobs: [-1, -1, -1], version: 0 },
    }),
    step({ forced: true, action: "submit", logProb: 0 }),
  ];

  it("trains on the sampled ids only: prompts and tool results 0, intercepted turns 0 when masked, forced turns absent", async () => {
    // Act
    const [d] = await policy.datums({
      samples: [{ rollout: rollout(steps), advantage: 0.5 }],
      settings: settings(true),
    });
    // Assess
    expect(d!.ids).toEqual([1, 2, 3, 10, 11, 4, 12, 13, 14]);
    expect(d!.loss_mask).toEqual([0, 0, 0, 1, 1, 0, 0, 0, 0]);
    expect(d!.behaviour_logprobs).toEqual([0, 0, 0, -0.5, -0.6, 0, -1, -1, -1]);
    expect(d!.advantage).toBe(0.5);
  });

  it("keeps intercepted turns in the loss when masking is off, and leaves out a sample with nothing sampled", async () => {
    const [d] = await policy.datums({
      samples: [{ rollout: rollout(steps), advantage: 1 }],
      settings: settings(false),
    });
    expect(d!.loss_mask).toEqual([0, 0, 0, 1, 1, 0, 1, 1, 1]);
    expect(
      await policy.datums({ samples: [{ rollout: rollout([steps[2]!]), advantage: 1 }], settings: settings(true) }),
    ).toEqual([]);
  });

  it("replays a rescue in H0's context under rescueContext \"base\": H0's messages, the same completions, the worker's ids and log-probabilities", async () => {
    // Prepare: a rescued rollout (a sibling's note and system text) and one H0 saw the same way
    const { client, replays } = replaying();
    const p = new TokenTrainer(client, { ...options, policyId: "b" });
    const text = {
      ...observation,
      instruction: "task\n\nsibling system text",
      text: "Result: start",
      notes: ["sibling note"],
      base: { instruction: "task", text: "Result: start", notes: [] },
    };
    const rescued = steps.map((st) => ({ ...st, observation: text }));
    const plain = steps.map((st) => ({ ...st, observation: { ...text, instruction: "task", notes: [] } }));
    const base = { ...settings(true), rescueContext: "base" as const };
    // Act
    const [d] = await p.datums({ samples: [{ rollout: rollout(rescued), advantage: 1 }], settings: base });
    const [same] = await p.datums({ samples: [{ rollout: rollout(plain), advantage: 1 }], settings: base });
    // Assess: one replay, for the rescued rollout only, with H0's messages and the sampled ids
    expect(replays).toHaveLength(1);
    expect(replays[0]).toMatchObject({
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: "task\n\nResult: start" },
      ],
      turns: [
        { completion_ids: [10, 11] },
        { append: [{ role: "tool", content: "Result: start" }], completion_ids: [12, 13, 14] },
      ],
    });
    expect(d!.ids).toEqual([7, 7, 10, 11, 8, 12, 13, 14]);
    expect(d!.behaviour_logprobs).toEqual([0, 0, -0.1, -0.2, 0, -0.3, -0.3, -0.3]);
    expect(d!.loss_mask).toEqual([0, 0, 1, 1, 0, 0, 0, 0]);
    expect(same!.ids).toEqual([1, 2, 3, 10, 11, 4, 12, 13, 14]);
  });

  it("under the truncated-is correction, weights each replayed token by exp(H0-context − sampled log-probability), at most 2; none leaves the row unweighted", async () => {
    // Prepare: the rescued rollout above (sampled log-probabilities −0.5, −0.6 | −1, −1, −1; replayed −0.1, −0.2 | −0.3
    // × 3)
    const { client } = replaying();
    const p = new TokenTrainer(client, { ...options, policyId: "w" });
    const text = {
      ...observation,
      instruction: "task\n\nsib",
      text: "Result: start",
      notes: ["n"],
      base: { instruction: "task", text: "Result: start", notes: [] },
    };
    const samples = [{ rollout: rollout(steps.map((st) => ({ ...st, observation: text }))), advantage: 1 }];
    // Act
    const [d] = await p.datums({
      samples,
      settings: { ...settings(true), rescueContext: "base", rescueCorrection: "truncated-is" },
    });
    const [none] = await p.datums({
      samples,
      settings: { ...settings(true), rescueContext: "base", rescueCorrection: "none" },
    });
    // Assess: e^0.4 on the first turn's tokens, e^0.7 ≈ 2.01 truncated to 2 on the second's, 1 on prompt ids
    const w = Math.exp(0.4);
    expect(d!.token_weights!.map((x) => Number(x.toFixed(12)))).toEqual(
      [1, 1, w, w, 1, 2, 2, 2].map((x) => Number(x.toFixed(12))),
    );
    expect(none!.token_weights).toBeUndefined();
  });

  it("with constrained tool calls, a datum names the tools its turns were constrained to and its replay asks for the same constraint", async () => {
    // Prepare
    const { client, replays } = replaying();
    const constrained = new TokenTrainer(client, { ...options, policyId: "c", constrainToolCalls: true });
    const text = {
      ...observation,
      instruction: "task\n\nsibling",
      text: "Result: start",
      notes: ["note"],
      base: { instruction: "task", text: "Result: start", notes: [] },
    };
    const batch = (rescueContext: "base" | "as-generated") => ({
      baseVersion: 0,
      samples: [{ rollout: rollout(steps.map((st) => ({ ...st, observation: text }))), advantage: 1 }],
      settings: { ...settings(true), rescueContext },
    });
    // Act
    const [d] = await constrained.datums(batch("base"));
    const [free] = await new TokenTrainer(client, { ...options, policyId: "c" }).datums(batch("as-generated"));
    // Assess
    expect(d!.constraint).toEqual({ tools: embeddedToolSchemas(["list", "submit"]) });
    expect(replays[0]).toMatchObject({ constrain_tool_calls: true });
    expect(free!.constraint).toBeUndefined();
  });
});

describe("TokenTrainer turns", () => {
  /** A worker stand-in that answers every sample with `completion` and records the requests. */
  const scripted = (
    completion: Partial<SampleResponseV2["completion"]>,
    extra: { constrainToolCalls?: boolean } = {},
  ) => {
    const requests: Record<string, unknown>[] = [];
    const client = {
      create: async () => ({ policy_id: "p", version: 0, tokenizer: { name: "t", eos_ids: [2] }, capabilities: {} }),
      sample: async (_id: string, req: Record<string, unknown>) => {
        requests.push(req);
        return {
          policy_version: 0,
          prompt_ids: [1],
          completion: {
            ids: [5, 6],
            logprobs: [-1, -2],
            text: "",
            content: "",
            finish_reason: "stop" as const,
            ...completion,
          },
        };
      },
    } as unknown as TokenPolicyClient;
    return {
      requests,
      policy: new TokenTrainer(client, { ...options, policyId: "p", ...extra }),
    };
  };
  const obs = { ...observation, text: "Result: start", notes: ["look at the docs"], hints: ["list"] };

  it("a tool call the worker could not parse is a failed round (invalid), never a crash; no call is no-tool-call", async () => {
    const bad = scripted({ text: "<tool_call>{oops", parse_error: "unterminated <tool_call>" });
    expect((await bad.policy.act(obs, createRng(1))).action).toBe(INVALID_TOOL_CALL);
    const none = scripted({ text: "hello", content: "hello" });
    expect(await none.policy.act(obs, createRng(1))).toMatchObject({
      action: NO_TOOL_CALL,
      args: { content: "hello" },
      logProb: -3,
    });
  });

  it("a first turn sends the system prompt, instruction and tools; later turns of the same episode append, with notes and hints", async () => {
    const s = scripted({ tool_calls: [{ id: "c", type: "function", function: { name: "list", arguments: "{}" } }] });
    const rng = createRng(3);
    const first = await s.policy.act(obs, rng);
    expect(first).toMatchObject({
      action: "list",
      tokens: { promptIds: [1], completionIds: [5, 6], logprobs: [-1, -2], version: 0 },
    });
    await s.policy.act({ ...obs, text: "Result: listed", notes: [], hints: [] }, rng);
    await s.policy.act(obs, createRng(4));
    const [a, b, c] = s.requests as {
      episode_id: string;
      messages?: { role: string; content: string }[];
      append?: { role: string; content: string }[];
      tools?: unknown[];
      sampling: { temperature: number; top_p: number };
    }[];
    expect(a!.messages![0]).toMatchObject({ role: "system", content: "s" });
    expect(a!.messages![1]!.content).toContain("[harness] look at the docs");
    expect(a!.messages![1]!.content).toContain("[harness] suggested next tool: list");
    expect(a!.tools).toHaveLength(2);
    expect(a!.sampling).toMatchObject({ temperature: 1, top_p: 1 });
    expect(b!.episode_id).toBe(a!.episode_id);
    expect(b!.append).toEqual([{ role: "tool", content: "Result: listed" }]);
    expect(c!.episode_id).not.toBe(a!.episode_id);
    expect(c!.messages).toBeDefined();
    expect(a).not.toHaveProperty("constrain_tool_calls");
  });

  it("with constrained tool calls, the first turn asks for them (the worker keeps them for the episode's later turns)", async () => {
    const { requests, policy: p } = scripted({}, { constrainToolCalls: true });
    const rng = createRng(5);
    await p.act(obs, rng);
    await p.act(obs, rng);
    expect(requests[0]).toMatchObject({ constrain_tool_calls: true, tools: embeddedToolSchemas(obs.tools) });
    expect(requests[1]).not.toHaveProperty("constrain_tool_calls");
  });
});

describe("a stale version at the worker (issue 53, item 3)", () => {
  /** A client whose worker answers every request with `status` and `body`. */
  const answering = (status: number, body: unknown) =>
    new TokenPolicyClient("http://worker.invalid", {
      clock: systemClock,
      retries: 0,
      fetch: (async () =>
        new Response(JSON.stringify(body), {
          status,
          headers: { "content-type": "application/json" },
        })) as typeof fetch,
    });
  const sampleRequest = {
    episode_id: "e",
    version: { exact: 7 },
    messages: [{ role: "user" as const, content: "hi" }],
  };

  it("the client reads the worker's 409 into the versions held and wanted", async () => {
    const stale = {
      error: {
        code: "STALE_POLICY_VERSION",
        message: "policy p is at version 3, not 7",
        held_version: 3,
        wanted_version: 7,
      },
    };
    await expect(answering(409, stale).sample("p", sampleRequest)).rejects.toMatchObject({
      constructor: StalePolicyVersionError,
      code: "STALE_POLICY_VERSION",
      held: 3,
      wanted: 7,
      message: expect.stringContaining("policy p is at version 3, not 7"),
    });
  });

  it("a 409 that states no versions (another server) leaves them unknown, never made up", async () => {
    const err = await answering(409, { error: { code: "STALE_POLICY_VERSION", message: "stale" } })
      .sample("p", sampleRequest)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StalePolicyVersionError);
    expect([(err as StalePolicyVersionError).held, (err as StalePolicyVersionError).wanted]).toEqual([
      undefined,
      undefined,
    ]);
    await expect(answering(409, { error: { code: "CONFLICT", message: "exists" } }).state("p")).rejects.toMatchObject({
      code: "CONFLICT",
    });
  });

  it("a sampler, given only what sampling needs, samples at its pinned version and names both when the answer is at another", async () => {
    const requests: Record<string, unknown>[] = [];
    const client = {
      state: async () => ({ policy_id: "mine", version: 8, tokenizer: { name: "t", eos_ids: [2] }, capabilities: {} }),
      sample: async (_id: string, req: Record<string, unknown>) => {
        requests.push(req);
        return {
          policy_version: 8,
          prompt_ids: [1],
          completion: { ids: [5], logprobs: [-1], text: "", content: "", finish_reason: "stop" as const },
        };
      },
    } as unknown as TokenPolicyClient;
    const sampler = new TokenSampler(client, {
      policyId: "mine",
      expectVersion: 7,
      system: "s",
      toolSchemas: embeddedToolSchemas,
    });
    await expect(sampler.act(observation, createRng(1))).rejects.toMatchObject({
      constructor: StalePolicyVersionError,
      held: 8,
      wanted: 7,
    });
    expect(requests[0]).toMatchObject({ version: { exact: 7 } });
  });
});
