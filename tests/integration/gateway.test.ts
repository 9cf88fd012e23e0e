import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayEpisodes, genericObserver } from "@harness-s/core/gateway";
import { createPool } from "@harness-s/core";
import { OpenAiUpstream } from "@harness-s/adapters/llm";
import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import type { ApiDeps } from "../../functions/api/deps.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { startLambdaGateway } from "../gateway-lambda.ts";
import { makeProfile, makeSpec } from "../factories.ts";
import { startScriptedOpenAi, type ChatRequest, type ScriptedReply } from "../scripted-openai.ts";

// The scripted model: look up first, look up again after an error, then submit; fails once when told to.
let failNext = 0;
let slowNext = 0;
const script = async (req: ChatRequest): Promise<ScriptedReply> => {
  if (slowNext > 0) {
    slowNext--;
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  if (failNext > 0) {
    failNext--;
    return { status: 500 };
  }
  const last = req.messages.at(-1)!;
  if (last.role === "user" || String(last.content).startsWith("Error"))
    return { call: { name: "lookup", arguments: '{"q":"x"}' } };
  return { call: { name: "submit", arguments: '{"answer":"42"}' } };
};

const h0 = makeSpec({ id: "h0", provenance: { direction: "base" } });
const sibling = makeSpec({
  id: "sib-notes",
  instruction: { systemAppend: "SIBLING SYSTEM TEXT", toolNotes: { lookup: "LOOKUP NOTE" } },
  postObservation: [{ on: "error:tool", hint: "lookup", text: "NOTE AFTER ERROR" }],
  provenance: { direction: "recovery" },
});
// Profiles that make Rank-1 pick H0 for family alpha and the sibling for family beta.
const profiles = {
  h0: makeProfile("h0", { byFamily: { alpha: { attempts: 10, successes: 9 }, beta: { attempts: 10, successes: 1 } } }),
  "sib-notes": makeProfile("sib-notes", {
    byFamily: { alpha: { attempts: 10, successes: 1 }, beta: { attempts: 10, successes: 9 } },
  }),
};
const tools = [
  {
    type: "function" as const,
    function: {
      name: "lookup",
      description: "Look something up",
      parameters: { type: "object", properties: { q: { type: "string" } } },
    },
  },
  {
    type: "function" as const,
    function: {
      name: "submit",
      description: "Commit the answer",
      parameters: { type: "object", properties: { answer: { type: "string" } } },
    },
  },
];

type Stores = Pick<ApiDeps, "keys" | "pools" | "profiles" | "meter">;
/**
 * Where the gateway runs: its URL, the stores behind it, and (deployed) a way to restart one of its processes between
 * two turns.
 */
interface Setup {
  url: string;
  deps: Stores;
  restart?: () => Promise<void>;
  close: () => Promise<void>;
}

let upstream: Awaited<ReturnType<typeof startScriptedOpenAi>>;
beforeAll(async () => {
  upstream = await startScriptedOpenAi(script);
});
afterAll(async () => {
  await upstream?.close();
});

const setups: [string, () => Promise<Setup>][] = [
  [
    "in one process (serve's API, episodes in memory)",
    async () => {
      const deps = memoryApiDeps({
        gateway: {
          upstream: new OpenAiUpstream(new OpenAI({ baseURL: upstream.url, apiKey: "none", maxRetries: 0 })),
          episodes: new GatewayEpisodes(new MemoryGatewayEpisodeStore({ maxEpisodes: 100, maxEpisodesPerKey: 100 }), {
            idleMs: 60_000,
          }),
          poolId: "gw",
          observerFor: genericObserver,
          submitTool: "submit",
          defaultFamily: "alpha",
        },
      });
      const api = await startApi(deps);
      return { url: api.url, deps, close: api.close };
    },
  ],
  [
    "in the API Lambda over DynamoDB Local: turns alternate between two processes, and one is restarted between two turns",
    async () => {
      const lambda = await startLambdaGateway(inject("dynamoEndpoint"), {
        upstream: upstream.url,
        pool: "gw",
        env: "generic",
        timeoutMs: 10_000,
      });
      return { url: lambda.url, deps: lambda.stores, restart: () => lambda.restart(0), close: lambda.close };
    },
  ],
];

describe.each(setups)("the Rank-1 harness gateway %s", (_name, setup) => {
  let api: Setup;
  let deps: Stores;
  let agent: OpenAI;
  let secret: string;

  beforeAll(async () => {
    api = await setup();
    deps = api.deps;
    await seedPool(deps as ApiDeps, createPool("gw", h0, [sibling]), profiles);
    secret = await addKey(deps as ApiDeps, "agent-key", ["gateway", "route"]);
    agent = new OpenAI({ baseURL: `${api.url}/v1/gateway`, apiKey: secret, maxRetries: 2 });
  }, 120_000);
  afterAll(async () => {
    await api?.close();
  });

  type Msg = OpenAI.Chat.ChatCompletionMessageParam;
  /** One agent turn: ask the gateway, append the reply and the tool's output (as the agent's own loop would). */
  async function turn(messages: Msg[], family: string, toolOutput?: string) {
    const { data, response } = await agent.chat.completions
      .create({ model: "scripted", messages, tools }, { headers: { "x-harness-s-task-family": family } })
      .withResponse();
    const reply = data.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & {
      tool_calls?: OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
    };
    messages.push({ role: "assistant", content: reply.content, tool_calls: reply.tool_calls } as Msg);
    if (toolOutput !== undefined)
      messages.push({ role: "tool", tool_call_id: reply.tool_calls![0]!.id, content: toolOutput });
    return { reply, headers: response.headers };
  }

  describe("driven by the openai SDK in front of a scripted model", () => {
    it("routes one task to H0 (the model sees the agent's own conversation) and another to the sibling (its instruction, tool note and trigger note)", async () => {
      // Act: an alpha episode (routed to H0), then a beta episode (routed to the sibling).
      const before = upstream.requests.length;
      const alpha: Msg[] = [
        { role: "system", content: "AGENT SYSTEM" },
        { role: "user", content: "task A" },
      ];
      const a1 = await turn(alpha, "alpha", "Error: nothing there");
      await api.restart?.();
      const a2 = await turn(alpha, "alpha");
      const beta: Msg[] = [
        { role: "system", content: "AGENT SYSTEM" },
        { role: "user", content: "task B" },
      ];
      const b1 = await turn(beta, "beta", "Error: nothing there");
      const b2 = await turn(beta, "beta", "found 42");
      const seen = upstream.requests.slice(before);
      // Assess: headers name the harness and the decision; the decision is recorded.
      expect(a1.headers.get("x-harness-s-harness")).toBe("h0");
      expect(b1.headers.get("x-harness-s-harness")).toBe("sib-notes");
      const decision = await (
        await fetch(`${api.url}/v1/decisions/${b1.headers.get("x-harness-s-decision")}`, {
          headers: { authorization: `Bearer ${secret}` },
        })
      ).json();
      expect(decision.chosen).toEqual(["sib-notes"]);
      // Under H0 the model sees exactly the agent's conversation.
      expect(seen[0]!.messages).toEqual([
        { role: "system", content: "AGENT SYSTEM" },
        { role: "user", content: "task A" },
      ]);
      expect(seen[0]!.tools!.map((t) => (t.function as { description?: string }).description)).toEqual([
        "Look something up",
        "Commit the answer",
      ]);
      expect(seen[1]!.messages.at(-1)).toMatchObject({ role: "tool", content: "Error: nothing there" });
      expect(a2.reply.tool_calls![0]!.function.name).toBe("lookup");
      // Under the sibling: its system text in the instruction, its tool note, its trigger's note on the error.
      expect(seen[2]!.messages[1]).toEqual({ role: "user", content: "task B\n\nSIBLING SYSTEM TEXT" });
      expect((seen[2]!.tools![0]!.function as { description?: string }).description).toBe(
        "Look something up\nLOOKUP NOTE",
      );
      expect(seen[3]!.messages.at(-1)).toMatchObject({
        role: "tool",
        content: "Error: nothing there\n[harness] NOTE AFTER ERROR",
      });
      expect(b2.reply.tool_calls![0]!.function.name).toBe("lookup");
    });

    it("answers stream: true as server-sent events, and an upstream failure is retried by the SDK with nothing lost", async () => {
      // Prepare: an episode one turn in; the model endpoint will fail once.
      const messages: Msg[] = [{ role: "user", content: "task C" }];
      await turn(messages, "alpha", "fine");
      failNext = 1;
      const before = upstream.requests.length;
      // Act: the next turn, streamed.
      const stream = await agent.chat.completions.create(
        { model: "scripted", messages, tools, stream: true },
        { headers: { "x-harness-s-task-family": "alpha" } },
      );
      const calls: string[] = [];
      for await (const chunk of stream)
        for (const c of chunk.choices[0]?.delta.tool_calls ?? []) if (c.function?.name) calls.push(c.function.name);
      // Assess: the 502 was retried by the SDK; the endpoint saw the same turn twice; the reply streamed whole.
      expect(calls).toEqual(["submit"]);
      expect(upstream.requests.length - before).toBe(2);
      expect(upstream.requests.at(-1)!.messages).toEqual(upstream.requests.at(-2)!.messages);
    });

    it("advances an episode once for two concurrent requests of one turn: both get the same reply, the model is asked once", async () => {
      // Prepare: an episode one turn in; the model's next answer takes a while.
      const messages: Msg[] = [{ role: "user", content: "task E" }];
      await turn(messages, "alpha", "Error: nothing there");
      const before = upstream.requests.length;
      slowNext = 1;
      // Act: the agent's request sent twice at once (a retry racing the original; deployed: to two processes).
      const ask = () =>
        agent.chat.completions.create(
          { model: "scripted", messages, tools },
          { headers: { "x-harness-s-task-family": "alpha" } },
        );
      const [first, second] = await Promise.all([ask(), ask()]);
      // Assess
      expect(second.choices[0]!.message).toEqual(first.choices[0]!.message);
      expect(upstream.requests.length - before).toBe(1);
    });

    it("returns the episode by id with each turn and the harness's insertions; meters gateway turns per key", async () => {
      // Prepare: a beta episode with its own id header.
      const messages: Msg[] = [{ role: "user", content: "task D" }];
      const headers = { "x-harness-s-task-family": "beta", "x-harness-s-episode": "ep-d" };
      for (const out of ["Error: no", "ok"]) {
        const r = await agent.chat.completions.create({ model: "scripted", messages, tools }, { headers });
        messages.push({ role: "assistant", content: null, tool_calls: r.choices[0]!.message.tool_calls } as Msg, {
          role: "tool",
          tool_call_id: "x",
          content: out,
        });
      }
      await agent.chat.completions.create({ model: "scripted", messages, tools }, { headers });
      // Act
      const get = (path: string, init?: RequestInit) =>
        fetch(`${api.url}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        });
      const trajectory = await (await get("/v1/gateway/episodes/ep-d")).json();
      const rewarded = await (
        await get("/v1/gateway/episodes/ep-d/reward", { method: "POST", body: JSON.stringify({ reward: 1 }) })
      ).json();
      // Assess
      expect(trajectory).toMatchObject({
        episodeId: "ep-d",
        harnessId: "sib-notes",
        systemText: "SIBLING SYSTEM TEXT",
        reward: null,
      });
      expect(trajectory.turns.map((t: { action: string }) => t.action)).toEqual(["lookup", "lookup", "submit"]);
      expect(trajectory.turns[1].harnessNotes).toEqual(["NOTE AFTER ERROR"]);
      expect(trajectory.datums).toEqual([]);
      expect(trajectory.untrained).toMatch(/no token ids/);
      expect(rewarded.reward).toBe(1);
      expect((await get("/v1/gateway/episodes/nope")).status).toBe(404);
      expect((await deps.meter.get("agent-key")).gatewayTurns).toBeGreaterThanOrEqual(8);
    });

    it("refuses a key without the gateway scope, a conversation it holds no episode for, and a bad header", async () => {
      const other = await addKey(deps as ApiDeps, "route-only", ["route"]);
      const post = (body: unknown, key = secret, headers: Record<string, string> = {}) =>
        fetch(`${api.url}/v1/gateway/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
      expect((await post({ model: "m", messages: [{ role: "user", content: "x" }] }, other)).status).toBe(403);
      const orphan = await post({
        model: "m",
        messages: [
          { role: "user", content: "never seen" },
          { role: "assistant", content: "hi" },
          { role: "user", content: "go on" },
        ],
      });
      expect(orphan.status).toBe(410);
      expect((await orphan.json()).error.code).toBe("EPISODE_CLOSED");
      const badTag = await post({ model: "m", messages: [{ role: "user", content: "y" }] }, secret, {
        "x-harness-s-task-tags": "ok,not a name!",
      });
      expect(badTag.status).toBe(400);
    });
  });
});
