import { describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { createRng, type PolicyObservation } from "@harness-s/core";
import { OpenAiToolPolicy } from "@harness-s/adapters/llm";

const tools = [
  {
    name: "execute_sql",
    action: "execute_sql",
    description: "run SQL",
    parameters: { type: "object", properties: { query: { type: "string" } } },
  },
];
/** An OpenAI client stand-in answering every completion with `message`, recording each request. */
const scripted = (message: Record<string, unknown>) => {
  const requests: Record<string, unknown>[] = [];
  const client = {
    chat: {
      completions: {
        create: async (req: Record<string, unknown>) => {
          requests.push(req);
          return { choices: [{ message }], usage: { prompt_tokens: 1, completion_tokens: 1 } };
        },
      },
    },
  } as unknown as OpenAI;
  return { requests, client };
};
const obs: PolicyObservation = {
  family: "db",
  tools: ["execute_sql"],
  event: "start",
  facts: [],
  taskTags: [],
  hints: [],
  baseHints: [],
  failedActions: [],
  turnsLeft: 5,
  instruction: "Count rows.",
  text: "table t",
  notes: [],
};

describe("OpenAiToolPolicy (the evaluation policy)", () => {
  it("replays what the model wrote: its text beside the call and the argument text exactly as generated", async () => {
    // Prepare: the model's first answer has text next to a call, with arguments spaced its own way
    const raw = '{ "query" :"SELECT  COUNT(*) FROM t" }';
    const { client } = scripted({
      content: "Let me count.",
      tool_calls: [{ id: "c1", type: "function", function: { name: "execute_sql", arguments: raw } }],
    });
    const policy = new OpenAiToolPolicy(client, { model: "m", system: "sys", tools });
    // Act
    const choice = await policy.act(obs, createRng(1));
    const next = policy.messages({
      ...obs,
      text: "[(3,)]",
      history: [
        { role: "env", text: "table t" },
        { role: "agent", text: choice.text ?? "", action: choice.action, args: choice.args, raw: choice.rawArguments },
      ],
    });
    // Assess
    expect(choice).toMatchObject({
      action: "execute_sql",
      args: { query: "SELECT  COUNT(*) FROM t" },
      text: "Let me count.",
      rawArguments: raw,
    });
    expect(next[2]).toEqual({
      role: "assistant",
      content: "Let me count.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "execute_sql", arguments: raw } }],
    });
  });

  it("samples at temperature 1 unless told otherwise, so a group's rollouts can differ", async () => {
    const s = scripted({ content: "no call" });
    await new OpenAiToolPolicy(s.client, { model: "m", system: "sys", tools }).act(obs, createRng(1));
    await new OpenAiToolPolicy(s.client, { model: "m", system: "sys", tools, temperature: 0 }).act(obs, createRng(1));
    expect(s.requests.map((r) => r.temperature)).toEqual([1, 0]);
  });

  it("reads its version from a policy worker's model name and refuses updates, naming the policy that trains", async () => {
    const { client } = scripted({ content: "" });
    expect(new OpenAiToolPolicy(client, { model: "run1-grpo-1@v7", system: "s", tools }).version()).toBe(7);
    expect(new OpenAiToolPolicy(client, { model: "gpt", system: "s", tools }).version()).toBe(0);
    await expect(new OpenAiToolPolicy(client, { model: "gpt", system: "s", tools }).update()).rejects.toThrow(
      /TokenTrainer/,
    );
  });
});
