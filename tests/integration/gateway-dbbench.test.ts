import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GatewayEpisodes } from "@harness-s/core/gateway";
import { createPool, runEpisode, type HarnessSpec } from "@harness-s/core";
import { OpenAiToolPolicy, OpenAiUpstream } from "@harness-s/adapters/llm";
import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import {
  BUNDLED_DATA_DIR,
  DBBENCH_SYSTEM,
  DbBenchEnvironment,
  MysqlEngine,
  dbbenchH0,
  dbbenchObserver,
  dbbenchSiblings,
  dbbenchTools,
  evalAgent,
  isMutation,
  loadSplit,
  parseArgumentsPy,
  rowPrompt,
  rowTask,
  type DbBenchRow,
} from "@harness-s/dbbench";
import type { ApiDeps } from "../../functions/api/deps.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { startLambdaGateway } from "../gateway-lambda.ts";
import { makeProfile } from "../factories.ts";
import { startScriptedOpenAi, type ChatRequest, type ScriptedReply } from "../scripted-openai.ts";

let engine: MysqlEngine;
let rows: DbBenchRow[];
const gate = dbbenchSiblings.find((s) => s.id === "dbbench-answer-gate")!;

beforeAll(async () => {
  engine = await MysqlEngine.start();
  const dev = await loadSplit(BUNDLED_DATA_DIR, "dev");
  rows = [
    ...dev.filter((r) => !isMutation(r)).slice(0, 6),
    ...dev.filter((r) => r.type[0] === "INSERT").slice(0, 2),
    ...dev.filter((r) => r.type[0] === "UPDATE").slice(0, 2),
  ];
}, 60_000);
afterAll(async () => {
  await engine?.shutdown();
});

const rowOf = (req: ChatRequest) => {
  const user = String(req.messages.find((m) => m.role === "user")!.content);
  return rows.find((r) => user.includes(rowPrompt(r)))!;
};
const call = (name: string, args: unknown): ScriptedReply => ({ call: { name, arguments: JSON.stringify(args) } });

/**
 * A model that answers a question with SQL text first (a malformed answer) and the right values
 * only once told its answer was refused; it plays a mutation's gold SQL, then commits.
 */
function script(req: ChatRequest): ScriptedReply {
  const row = rowOf(req);
  const turns = req.messages.filter((m) => m.role === "assistant").length;
  if (isMutation(row))
    return turns < row.label.length
      ? call("execute_sql", { query: row.label[turns] })
      : call("commit_final_answer", { answers: [] });
  const refused = req.messages.some((m) => m.role === "tool" && String(m.content).includes("was not accepted"));
  return call("commit_final_answer", { answers: refused ? row.label : ["SELECT 1"] });
}

const toolPolicy = (client: OpenAI) =>
  new OpenAiToolPolicy(client, {
    model: "scripted",
    system: DBBENCH_SYSTEM,
    tools: dbbenchTools,
    parseArguments: parseArgumentsPy,
  });

type Served = { url: string; deps: Pick<ApiDeps, "keys" | "pools" | "profiles">; close: () => Promise<void> };
const setups: [string, (model: string) => Promise<Served>][] = [
  [
    "in one process",
    async (model) => {
      const deps = memoryApiDeps({
        gateway: {
          upstream: new OpenAiUpstream(new OpenAI({ baseURL: model, apiKey: "none", maxRetries: 0 })),
          episodes: new GatewayEpisodes(new MemoryGatewayEpisodeStore({ maxEpisodes: 100, maxEpisodesPerKey: 100 }), {
            idleMs: 60_000,
          }),
          poolId: "db",
          observerFor: dbbenchObserver(new Map(rows.map((r) => [r.id, r]))),
          submitTool: "commit_final_answer",
          defaultFamily: "dbbench",
          parseArguments: parseArgumentsPy,
        },
      });
      const api = await startApi(deps);
      return { url: api.url, deps, close: api.close };
    },
  ],
  [
    "in the API Lambda over DynamoDB Local, turns alternating between two processes",
    async (model) => {
      const lambda = await startLambdaGateway(inject("dynamoEndpoint"), {
        upstream: model,
        pool: "db",
        env: "dbbench",
        timeoutMs: 10_000,
      });
      return { url: lambda.url, deps: lambda.stores, close: lambda.close };
    },
  ],
];

describe.each(setups)("a DBBench episode through the gateway %s (MariaDB, a scripted model)", (_name, setup) => {
  it("scores as `dbbench eval` does with the harness the gateway routed to, and the model sees the same messages", async () => {
    // Prepare: a pool where Rank-1 picks the answer gate for questions and H0 for INSERT/UPDATE rows.
    const model = await startScriptedOpenAi(script);
    const favour = (byType: Record<string, number>) =>
      Object.fromEntries(Object.entries(byType).map(([t, s]) => [`dbbench/${t}`, { attempts: 20, successes: s }]));
    const profiles = {
      "dbbench-h0": makeProfile("dbbench-h0", { byTaskTag: favour({ INSERT: 20, UPDATE: 20 }) }),
      "dbbench-answer-gate": makeProfile("dbbench-answer-gate", {
        byFamily: { dbbench: { attempts: 20, successes: 18 } },
        byTaskTag: favour({ INSERT: 0, UPDATE: 0 }),
      }),
    };
    const api = await setup(model.url);
    const deps = api.deps as ApiDeps;
    await seedPool(deps, createPool("db", dbbenchH0, [gate]), profiles);
    const secret = await addKey(deps, "agent", ["gateway"]);
    const env = new DbBenchEnvironment(rows, engine);
    try {
      // Act: the agent runs plain H0 (AgentBench's loop) against the gateway, one row at a time.
      const viaGateway = new Map<string, { success: boolean; harness: string; requests: ChatRequest[] }>();
      for (const row of rows) {
        const before = model.requests.length;
        const headers = {
          "x-harness-s-episode": `gw-${row.id}`,
          "x-harness-s-task-id": row.id,
          "x-harness-s-task-tags": row.type[0]!,
        };
        const client = new OpenAI({
          baseURL: `${api.url}/v1/gateway`,
          apiKey: secret,
          maxRetries: 0,
          defaultHeaders: headers,
        });
        const rollout = await runEpisode(rowTask(row), dbbenchH0, 1, { env, policy: toolPolicy(client) });
        viaGateway.set(row.id, {
          success: rollout.success,
          harness: (
            await (
              await fetch(`${api.url}/v1/gateway/episodes/gw-${row.id}`, {
                headers: { authorization: `Bearer ${secret}` },
              })
            ).json()
          ).harnessId,
          requests: model.requests.slice(before),
        });
      }
      // …and `dbbench eval` with the harness each row was routed to.
      const byHarness = new Map<string, HarnessSpec>([dbbenchH0, gate].map((h) => [h.id, h]));
      const viaEval = new Map<string, { success: boolean; requests: ChatRequest[] }>();
      for (const row of rows) {
        const before = model.requests.length;
        const summary = await evalAgent([row], engine, byHarness.get(viaGateway.get(row.id)!.harness)!, () =>
          toolPolicy(new OpenAI({ baseURL: model.url, apiKey: "x", maxRetries: 0 })),
        );
        viaEval.set(row.id, { success: summary.results[0]!.success, requests: model.requests.slice(before) });
      }
      // Assess: routing as the profiles say, the same score row by row, the same conversation at the model.
      const harnesses = rows.map((r) => viaGateway.get(r.id)!.harness);
      expect(harnesses).toEqual(rows.map((r) => (isMutation(r) ? "dbbench-h0" : "dbbench-answer-gate")));
      for (const row of rows) {
        expect(viaGateway.get(row.id)!.success, row.id).toBe(viaEval.get(row.id)!.success);
        const strip = (reqs: ChatRequest[]) => reqs.map((r) => ({ messages: r.messages, tools: r.tools }));
        expect(strip(viaGateway.get(row.id)!.requests), row.id).toEqual(strip(viaEval.get(row.id)!.requests));
      }
      // The gate made the questions right (under H0 the SQL-text answer is wrong): every row succeeds here.
      expect(rows.filter((r) => viaGateway.get(r.id)!.success)).toHaveLength(rows.length);
      const refused = viaGateway.get(rows[0]!.id)!.requests[1]!.messages.at(-1)!;
      expect(refused).toMatchObject({
        role: "tool",
        content: expect.stringMatching(
          /^The answer was not accepted \(answer:well-formed\).*\n\[harness\] Commit only the answer values/s,
        ),
      });
    } finally {
      await api.close();
      await model.close();
    }
  }, 120_000);
});
