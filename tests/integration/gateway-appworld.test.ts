import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, runEpisode, systemClock } from "@harness-s/core";
import { OpenAiToolPolicy } from "@harness-s/adapters/llm";
import {
  APPWORLD_FIXTURE_TASKS,
  APPWORLD_SYSTEM,
  AppWorldEnvironment,
  AppWorldServerPool,
  appworldH0,
  appworldSiblings,
  appworldTaskSets,
  appworldTools,
  startFixtureServer,
  type FixtureServer,
} from "@harness-s/envs";
import { gatewaySettings } from "../../functions/api/gateway-setup.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeProfile } from "../factories.ts";
import { startScriptedOpenAi, type ChatRequest, type ScriptedReply } from "../scripted-openai.ts";

// Issue 34, item 4: an agent that runs AppWorld itself, pointed at the gateway configured with
// `env: "appworld"`; the gateway reads execute's outputs with AppWorld's observer, so the routed
// sibling's gate (state:verified) holds complete_task until the change is read back.
const verify = appworldSiblings.find((h) => h.id === "appworld-verify-before-complete")!;
const LOGIN =
  'pw = {a["account_name"]: a["password"] for a in apis.supervisor.show_account_passwords()}\ntoken = apis.todo.login(username=apis.supervisor.show_profile()["email"], password=pw["todo"])["access_token"]';
const ADD = 'apis.todo.add_task(access_token=token, title="Call the plumber", list="home")';
const READ_BACK = "print(apis.todo.show_tasks(access_token=token, page_index=0))";
const call = (name: string, args: unknown): ScriptedReply => ({ call: { name, arguments: JSON.stringify(args) } });

/** A model that logs in, adds the task and completes, reading the change back only when told to. */
function script(req: ChatRequest): ScriptedReply {
  const sent = req.messages.flatMap((m) => m.tool_calls ?? []).map((c) => c.function.arguments);
  const told = req.messages.some((m) => m.role === "tool" && String(m.content).includes("Read back what you changed"));
  if (sent.length === 0) return call("execute", { code: LOGIN });
  if (sent.length === 1) return call("execute", { code: ADD });
  if (told && !sent.some((a) => a.includes("show_tasks"))) return call("execute", { code: READ_BACK });
  return call("complete_task", {});
}

let server: FixtureServer;
beforeAll(async () => {
  server = await startFixtureServer("appworld/server.py");
}, 60_000);
afterAll(() => server?.stop());

describe("an AppWorld agent through the gateway (env appworld, the local AppWorld-protocol server, a scripted model)", () => {
  it("routes to the verification sibling, whose gate holds complete_task after a change until a read follows it", async () => {
    // Prepare: a pool where Rank-1 picks the verification sibling for AppWorld tasks
    const model = await startScriptedOpenAi(script);
    const deps = memoryApiDeps({
      gateway: await gatewaySettings({ upstream: model.url, pool: "aw", env: "appworld", timeoutMs: 10_000 }),
    });
    const api = await startApi(deps);
    await seedPool(deps, createPool("aw", appworldH0, [verify]), {
      [appworldH0.id]: makeProfile(appworldH0.id, { byFamily: { appworld: { attempts: 20, successes: 6 } } }),
      [verify.id]: makeProfile(verify.id, { byFamily: { appworld: { attempts: 20, successes: 16 } } }),
    });
    const secret = await addKey(deps, "agent", ["gateway"]);
    const sets = appworldTaskSets(APPWORLD_FIXTURE_TASKS);
    const task = [...sets.train, ...sets.dev, ...sets.heldout].find((t) => t.id === "todo_add_plumber")!;
    const env = new AppWorldEnvironment(new AppWorldServerPool([server.url], systemClock), "gateway");
    try {
      // Act: the agent runs plain H0 against the gateway
      const headers = { "x-harness-s-episode": "aw-1", "x-harness-s-task-id": task.id };
      const client = new OpenAI({
        baseURL: `${api.url}/v1/gateway`,
        apiKey: secret,
        maxRetries: 0,
        defaultHeaders: headers,
      });
      const policy = new OpenAiToolPolicy(client, { model: "scripted", system: APPWORLD_SYSTEM, tools: appworldTools });
      const rollout = await runEpisode(task, appworldH0, 1, { env, policy });
      const episode = await (
        await fetch(`${api.url}/v1/gateway/episodes/aw-1`, { headers: { authorization: `Bearer ${secret}` } })
      ).json();
      // Assess: routed to the sibling; its gate answered the first complete_task; the agent ran the read-back and
      // succeeded
      expect(episode.harnessId).toBe(verify.id);
      const sent = model.requests.map((r) => r.messages.flatMap((m) => m.tool_calls ?? []).length);
      expect(sent).toEqual([0, 1, 2, 3, 4]);
      expect(model.requests[3]!.messages.at(-1)).toMatchObject({
        role: "tool",
        content: expect.stringMatching(/state:verified[\s\S]*\[harness\] Read back what you changed/),
      });
      expect(rollout.steps.map((s) => s.action)).toEqual(["execute", "execute", "execute", "submit"]);
      expect(rollout.success).toBe(true);
    } finally {
      await api.close();
      await model.close();
    }
  }, 120_000);
});
