import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { createRng, runEpisode, type Environment, type Policy } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { OpenEnvEnvironment, startOpenEnvServer } from "@harness-s/adapters/openenv";
import { TextEnvironment, defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { makeSpec, makeTask } from "../factories.ts";

// Issue 31, items 3 and 7: the OpenEnv client against this project's env-serve and against a
// minimal server written here from the protocol's documented routes (a WebSocket session at /ws;
// reset, step with call_tool, observation {observation, reward, done}).
const outbound = { allowLoopback: true };
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let served: Awaited<ReturnType<typeof startOpenEnvServer>>;

beforeAll(async () => {
  inst = await setup.instance(1);
  served = await startOpenEnvServer(
    await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }),
  );
}, 120_000); // evolving the embedded pool (here and in builtinOpenEnv) is CPU work: on a loaded machine well past the default 10 s
afterAll(() => served?.close());

/** The in-process environment started as the OpenEnv client starts a server's: with the seed it draws first. */
const reseeded = (inner: Environment): Environment => ({
  tools: (t) => inner.tools(t),
  start: (t, rng) => inner.start(t, createRng(rng.int(2 ** 31))),
});

describe("the OpenEnv client", () => {
  it("runs the embedded suite through env-serve exactly as in process: the same actions, events and rewards", async () => {
    const env = new OpenEnvEnvironment({
      url: served.url,
      outbound,
      tools: setup.env.tools(inst.train[0]!),
      submit: "submit",
    });
    const local = reseeded(new TextEnvironment(setup.env));
    const tasks = inst.train.slice(0, 6);
    for (const [i, task] of tasks.entries()) {
      const harness = i % 2 ? inst.evolution.pool.siblings[0]! : inst.evolution.pool.base;
      const remote = await runEpisode(task, harness, 100 + i, {
        env: new OpenEnvEnvironment({ url: served.url, outbound, tools: setup.env.tools(task), submit: "submit" }),
        policy: setup.createPolicy(1),
      });
      const here = await runEpisode(task, harness, 100 + i, { env: local, policy: setup.createPolicy(1) });
      expect({
        actions: remote.steps.map((s) => s.action),
        events: remote.events,
        reward: remote.reward,
        tags: remote.failureTags,
      }).toEqual({
        actions: here.steps.map((s) => s.action),
        events: here.events,
        reward: here.reward,
        tags: here.failureTags,
      });
    }
    expect(env.tools(tasks[0]!)).toContain("submit");
  });

  it("reads a minimal server of the protocol, written from its routes, with the generic observer; an unknown task is a clear error", async () => {
    // The server: count with `inc`, then `submit` pays 1 at exactly 3.
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", path: "/ws" });
    await new Promise((r) => wss.once("listening", r));
    wss.on("connection", (ws) => {
      let count = 0;
      ws.on("message", (raw) => {
        const m = JSON.parse(raw.toString());
        const answer = (observation: object, reward: number | null, done: boolean) =>
          ws.send(JSON.stringify({ type: "observation", data: { observation, reward, done } }));
        if (m.type === "reset") {
          if (m.data.task_id !== "count-3")
            return ws.send(JSON.stringify({ type: "error", data: { message: "no such task", code: "UNKNOWN_TASK" } }));
          count = 0;
          return answer({ prompt: "count to three" }, null, false);
        }
        if (m.type === "step" && m.data.tool_name === "inc") return answer({ result: `count=${++count}` }, null, false);
        if (m.type === "step" && m.data.tool_name === "finish")
          return answer({ result: "done" }, count === 3 ? 1 : 0, true);
        ws.send(JSON.stringify({ type: "error", data: { message: "unknown" } }));
      });
    });
    const url = `http://127.0.0.1:${(wss.address() as { port: number }).port}`;
    const counting = (n: number): Policy => {
      let calls = 0;
      return {
        version: () => 0,
        act: async () => ({ action: calls++ < n ? "inc" : "submit", logProb: 0 }),
        update: async () => ({ version: 0, metrics: { loss: 0, clippedFraction: 0, kl: 0, steps: 0 } }),
      };
    };
    try {
      const env = new OpenEnvEnvironment({ url, outbound, tools: ["inc", "submit"], submit: "finish" });
      const task = makeTask({ id: "count-3", family: "count" });
      const good = await runEpisode(task, makeSpec(), 1, { env, policy: counting(3) });
      const bad = await runEpisode(task, makeSpec(), 1, { env, policy: counting(2) });
      expect([good.reward, good.success, bad.reward, bad.success]).toEqual([1, true, 0, false]);
      expect(good.steps.map((s) => s.action)).toEqual(["inc", "inc", "inc", "submit"]);
      expect(good.events).toContain("tool:ok");
      await expect(
        runEpisode(makeTask({ id: "nope", family: "count" }), makeSpec(), 1, { env, policy: counting(1) }),
      ).rejects.toThrow(/no such task/);
    } finally {
      await new Promise((r) => wss.close(r));
    }
  });

  it("refuses a server on loopback unless loopback is allowed, before connecting", async () => {
    const env = new OpenEnvEnvironment({
      url: served.url,
      outbound: { allowLoopback: false },
      tools: ["submit"],
      submit: "submit",
    });
    await expect(env.start(inst.train[0]!, createRng(1))).rejects.toThrow(/loopback/);
  });
});
