import { once } from "node:events";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { Environment } from "@harness-s/core";
import { IDLE_CLOSE, startOpenEnvServer, taskIdOfSeed, type OpenEnvServerOptions } from "@harness-s/adapters/openenv";
import { makeTask } from "../factories.ts";

// Issue 52, items 1 and 2, in process with short bounds: sessions expire when idle, one address
// cannot hold every session, a slow body or slow headers do not hold a connection, and a reset
// without a task on a server that has none to draw from is a clear error (item 3).
const tiny: Environment = {
  tools: () => ["look", "submit"],
  start: async () => ({
    initial: { event: "start", facts: [], done: false, text: "ready" },
    act: async () => ({ event: "tool:ok", facts: [], done: false, text: "ok" }),
    finish: async () => ({ reward: 1, success: true, failureTags: [], behaviours: {} }),
  }),
};
const logged: string[] = [];
const options = (over: Partial<OpenEnvServerOptions> = {}): OpenEnvServerOptions => ({
  env: tiny,
  tasks: { get: async (id) => (id.startsWith("t-") ? makeTask({ id }) : undefined) },
  describeTools: (actions) => actions.map((name) => ({ name, description: "", input_schema: {} })),
  submit: "submit",
  resetTasks: ["t-0", "t-1", "t-2"],
  log: (line) => logged.push(line),
  ...over,
});
const servers: { close: () => Promise<void> }[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  expect(logged.splice(0)).toEqual([]);
});
const serve = async (over: Partial<OpenEnvServerOptions>) => {
  const s = await startOpenEnvServer(options(over));
  servers.push(s);
  return { ...s, ws: `${s.url.replace(/^http/, "ws")}/ws`, port: Number(new URL(s.url).port) };
};

/** Opens a session; resolves with the socket, or with the HTTP status the upgrade was refused with. */
const open = (url: string, localAddress?: string) =>
  new Promise<WebSocket | number>((resolve, reject) => {
    const ws = new WebSocket(url, localAddress ? { localAddress } : {});
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", reject);
  });
const closed = (ws: WebSocket, ms: number) =>
  new Promise<{ code: number; reason: string } | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    ws.once("close", (code, reason) => {
      clearTimeout(timer);
      resolve({ code, reason: reason.toString() });
    });
  });

describe("the OpenEnv server's bounds", () => {
  it("sessions that hold every slot and say nothing are closed after sessionIdleSeconds (1001), and a later client gets in; one that keeps talking stays", async () => {
    const s = await serve({ maxSessions: 4, maxSessionsPerAddress: 4, sessionIdleSeconds: 0.5 });
    const held = (await Promise.all(Array.from({ length: 4 }, () => open(s.ws)))) as WebSocket[];
    expect(await open(s.ws)).toBe(503);
    const talker = held[0]!;
    const talking = setInterval(() => talker.send(JSON.stringify({ type: "state" })), 100);
    const ends = await Promise.all(held.slice(1).map((ws) => closed(ws, 10_000)));
    expect(ends).toEqual(Array(3).fill({ code: IDLE_CLOSE.code, reason: "idle: no message for 0.5 s" }));
    expect(talker.readyState).toBe(WebSocket.OPEN);
    clearInterval(talking);
    const later = await open(s.ws);
    expect(later).toBeInstanceOf(WebSocket);
    (later as WebSocket).close();
    talker.close();
  });

  it("one remote address holds at most maxSessionsPerAddress sessions (429 past them); another address still gets one", async () => {
    const s = await serve({ maxSessions: 10, maxSessionsPerAddress: 2 });
    const mine = (await Promise.all([open(s.ws), open(s.ws)])) as WebSocket[];
    expect(await open(s.ws)).toBe(429);
    const other = await open(s.ws, "127.0.0.2");
    expect(other).toBeInstanceOf(WebSocket);
    // A session that ends gives its address's slot back.
    mine[0]!.close();
    await once(mine[0]!, "close");
    await new Promise((r) => setTimeout(r, 50));
    const again = await open(s.ws);
    expect(again).toBeInstanceOf(WebSocket);
    for (const ws of [mine[1]!, other as WebSocket, again as WebSocket]) ws.close();
  });

  it("a body that stalls, or trickles a byte at a time past bodyTimeoutMs, is a 408 REQUEST_TIMEOUT; headers that never end close the connection", async () => {
    const s = await serve({ bodyTimeoutMs: 300, headersTimeoutMs: 500 });
    const raw = async (write: (socket: ReturnType<typeof connect>) => Promise<void>) => {
      const socket = connect(s.port, "127.0.0.1");
      socket.on("error", () => undefined);
      let reply = "";
      socket.on("data", (d: Buffer) => (reply += d.toString()));
      await once(socket, "connect");
      const ended = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 8_000);
        socket.once("close", () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      void write(socket).catch(() => undefined);
      const end = await ended;
      socket.destroy();
      return { end, reply };
    };
    const head = "POST /reset HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n";
    const stalled = await raw(async (socket) => void socket.write(`${head}{"se`));
    expect(stalled.end).toBe(true);
    expect(stalled.reply).toMatch(/^HTTP\/1\.1 408 [\s\S]*"REQUEST_TIMEOUT"/);
    const trickled = await raw(async (socket) => {
      socket.write(head);
      for (let i = 0; i < 40 && !socket.destroyed; i++) {
        socket.write(" ");
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    expect(trickled.reply).toMatch(/^HTTP\/1\.1 408 /);
    const slowHeaders = await raw(async (socket) => void socket.write("GET /health HTTP/1.1\r\nHost: x\r\n"));
    expect(slowHeaders.end).toBe(true);
    expect(slowHeaders.reply).not.toMatch(/^HTTP\/1\.1 200/);
  });

  it("HTTP resets in progress count against maxSessions: past them a 503 SESSIONS_FULL, not one more episode held", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const slow: Environment = {
      tools: tiny.tools,
      start: async (task, rng) => {
        started++;
        await gate;
        return tiny.start(task, rng);
      },
    };
    const s = await serve({ env: slow, maxSessions: 2 });
    const held = [1, 2].map(() => fetch(`${s.url}/reset`, { method: "POST", body: "{}" }));
    while (started < 2) await new Promise((r) => setTimeout(r, 10));
    const third = await fetch(`${s.url}/reset`, { method: "POST", body: "{}", signal: AbortSignal.timeout(5_000) });
    expect(third.status).toBe(503);
    expect(await third.json()).toMatchObject({ detail: { code: "SESSIONS_FULL" } });
    release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    expect(started).toBe(2);
  });

  it("an answer that cannot be written (a BigInt in a task) is a 500 INTERNAL over HTTP, logged and not sent; over WebSocket it ends only that session", async () => {
    const s = await serve({ tasks: { get: async (id) => makeTask({ id, instruction: 10n as unknown as string }) } });
    const answer = await fetch(`${s.url}/reset`, { method: "POST", body: JSON.stringify({ task_id: "t-0" }) });
    expect(answer.status).toBe(500);
    expect(await answer.json()).toEqual({ detail: { code: "INTERNAL", message: "internal error" } });
    const ws = (await open(s.ws)) as WebSocket;
    ws.send(JSON.stringify({ type: "reset", data: { task_id: "t-0" } }));
    expect((await closed(ws, 5_000))?.code).toBe(1006);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    expect(logged.splice(0).map((line) => line.split("\n")[0])).toEqual([
      expect.stringMatching(/^openenv server: POST \/reset: TypeError: Do not know how to serialize a BigInt/),
      expect.stringMatching(/^openenv server: a session's message: TypeError: Do not know how to serialize a BigInt/),
    ]);
  });

  it("a reset without task_id on a server with no tasks to draw from is UNKNOWN_TASK, saying why; a task's id still works", async () => {
    const s = await serve({ resetTasks: undefined });
    const answer = await fetch(`${s.url}/reset`, { method: "POST", body: JSON.stringify({ seed: 4 }) });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({
      detail: { code: "UNKNOWN_TASK", message: expect.stringMatching(/needs a task_id/) },
    });
    expect((await fetch(`${s.url}/reset`, { method: "POST", body: JSON.stringify({ task_id: "t-9" }) })).status).toBe(
      200,
    );
  });

  it("taskIdOfSeed: seed mod n in the listed order, negative seeds wrapping, none without tasks", () => {
    const ids = ["a", "b", "c"];
    expect([0, 1, 2, 3, 7, -1, -3, 2 ** 53 - 1].map((seed) => taskIdOfSeed(ids, seed))).toEqual([
      "a",
      "b",
      "c",
      "a",
      "b",
      "c",
      "a",
      "b",
    ]);
    expect(taskIdOfSeed([], 1)).toBeUndefined();
  });
});
