import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { httpCase, runHttpCase, runWsCase, wsCase, type WsOutcome } from "../openenv-fuzz.ts";
import { OP, frame, openRaw, textFrame } from "../raw-websocket.ts";

// Issue 52, items 1–3: a real `harness-s env-serve --env embedded` process as a hostile OpenEnv
// client sees it. Nothing one unauthenticated client sends may end the process (item 1); a
// session with no message for --session-idle-seconds is closed (item 2); reset takes a seed
// alone, as an OpenEnv client calls it, and /schema says so (item 3).
const IDLE_SECONDS = 2;
let proc: ChildProcess;
let port: number;
let base: string;
let stderr = "";
let trainIds: string[];

beforeAll(async () => {
  const tasksOut = join(await mkdtemp(join(tmpdir(), "hs-env-serve-")), "tasks.json");
  const args = [
    "env-serve",
    "--env",
    "embedded",
    "--port",
    "0",
    "--session-idle-seconds",
    String(IDLE_SECONDS),
    "--tasks-out",
    tasksOut,
  ];
  proc = spawn("node", ["packages/cli/bin/harness-s.js", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  for (let i = 0; i < 1_200 && !/on (http:\/\/\S+):/.test(out) && proc.exitCode === null; i++)
    await new Promise((r) => setTimeout(r, 100));
  base = /on (http:\/\/\S+):/.exec(out)?.[1] ?? "";
  if (!base) throw new Error(`env-serve did not start: ${out}\n${stderr}`);
  port = Number(new URL(base).port);
  trainIds = (JSON.parse(await readFile(tasksOut, "utf8")) as { tasks: { id: string }[] }).tasks.map((t) => t.id);
}, 150_000);
afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await once(proc, "exit");
  }
});

/** The child's CPU so far, in ms (Linux's /proc; NaN elsewhere). */
async function childCpuMs(): Promise<number> {
  const fields = (await readFile(`/proc/${proc.pid}/stat`, "utf8").catch(() => "")).split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The process is running and answers /health. */
async function expectAlive(): Promise<void> {
  expect(proc.exitCode, `env-serve died: ${stderr.slice(-2_000)}`).toBeNull();
  const health = await fetch(`${base}/health`, { signal: AbortSignal.timeout(10_000) });
  expect(health.status).toBe(200);
}

const postReset = (body: string | Buffer) =>
  fetch(`${base}/reset`, {
    method: "POST",
    body: typeof body === "string" ? body : new Uint8Array(body),
    headers: { "content-type": "application/json" },
    signal: AbortSignal.timeout(20_000),
  });

/** A WebSocket session with the `ws` client: each message answered in order. */
async function session(): Promise<{
  ask: (m: unknown) => Promise<{ type: string; data: Record<string, unknown> }>;
  ws: WebSocket;
}> {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/ws`);
  await once(ws, "open");
  const answers: { type: string; data: Record<string, unknown> }[] = [];
  const waiting: ((a: { type: string; data: Record<string, unknown> }) => void)[] = [];
  ws.on("message", (d) => {
    const a = JSON.parse(d.toString());
    const w = waiting.shift();
    if (w) w(a);
    else answers.push(a);
  });
  const ask = (m: unknown) =>
    new Promise<{ type: string; data: Record<string, unknown> }>((resolve) => {
      waiting.push(resolve);
      ws.send(JSON.stringify(m));
    });
  return { ask, ws };
}

/** A whole episode as a client runs one: reset, list the tools, submit; the submit is graded. */
async function normalEpisode(): Promise<void> {
  const { ask, ws } = await session();
  try {
    const first = await ask({ type: "reset", data: { task_id: trainIds[0], seed: 1 } });
    expect(first).toMatchObject({
      type: "observation",
      data: { done: false, observation: { task: { id: trainIds[0] } } },
    });
    const tools = await ask({ type: "step", data: { type: "list_tools" } });
    expect((tools.data.observation as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain("submit");
    const end = await ask({ type: "step", data: { type: "call_tool", tool_name: "submit", arguments: {} } });
    expect(end).toMatchObject({ type: "observation", data: { done: true, reward: expect.any(Number) } });
  } finally {
    ws.close();
  }
}

describe("env-serve: nothing one client sends ends the process (item 1)", () => {
  it("POST /reset with {oops is a 400 INVALID_JSON; a body not UTF-8, one over 1 MiB in bytes (400,000 '€'), one dropped half-way: the process lives", async () => {
    // The example
    const oops = await postReset("{oops");
    expect(oops.status).toBe(400);
    expect(await oops.json()).toEqual({ detail: { code: "INVALID_JSON", message: expect.stringMatching(/not JSON/) } });
    await expectAlive();
    // Variants: bytes that are not UTF-8, a body bounded by bytes not characters, a body dropped before its end
    expect((await postReset(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))).status).toBe(400);
    expect((await postReset("€".repeat(400_000))).status).toBe(413);
    const dropped = connect(port, "127.0.0.1");
    dropped.on("error", () => undefined);
    await once(dropped, "connect");
    dropped.write(
      'POST /reset HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"se',
    );
    await new Promise((r) => setTimeout(r, 100));
    dropped.destroy();
    await new Promise((r) => setTimeout(r, 200));
    await expectAlive();
    await normalEpisode();
  });

  it("a WebSocket message over 1 MiB closes its session with 1009, a 4-byte text frame of invalid UTF-8 with 1007; the next session is served", async () => {
    const big = await openRaw(port);
    big.socket.write(textFrame(Buffer.alloc((1 << 20) + 1, "a")));
    expect(await big.ended(10_000)).toBe(true);
    expect(big.close?.code).toBe(1009);
    const bad = await openRaw(port);
    bad.socket.write(frame(OP.text, Buffer.from([0xc3, 0x28, 0xa0, 0xa1])));
    expect(await bad.ended(10_000)).toBe(true);
    expect(bad.close?.code).toBe(1007);
    await new Promise((r) => setTimeout(r, 200));
    await expectAlive();
    // Variant: the same through the `ws` client, a binary frame answered with an error, not a close
    const { ask, ws } = await session();
    ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(await ask({ type: "state" })).toMatchObject({ type: "error", data: { code: "INVALID_MESSAGE" } });
    ws.close();
    await normalEpisode();
  });

  it("an upgrade to a target no URL parser reads, a garbage request line, 64 KiB of headers: each answered 4xx or dropped, the process alive", async () => {
    const raw = async (text: string) => {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => undefined);
      let reply = "";
      socket.on("data", (d: Buffer) => (reply += d.toString()));
      await once(socket, "connect");
      socket.write(text);
      await Promise.race([once(socket, "close"), new Promise((r) => setTimeout(r, 10_000))]);
      socket.destroy();
      return reply.split("\r\n")[0] ?? "";
    };
    const upgrade =
      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    expect(await raw(`GET http://[ HTTP/1.1\r\nHost: x\r\n${upgrade}\r\n`)).toMatch(/^HTTP\/1\.1 4\d\d /);
    await expectAlive();
    expect(await raw(`GET /ws/../x HTTP/1.1\r\nHost: x\r\n${upgrade}\r\n`)).toMatch(/^HTTP\/1\.1 404 /);
    expect(await raw("\u0000\u0001GARBAGE\r\n\r\n")).toMatch(/^HTTP\/1\.1 400 |^$/);
    expect(await raw(`GET /health HTTP/1.1\r\nHost: x\r\nx-big: ${"a".repeat(65_536)}\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 431 |^$/,
    );
    await expectAlive();
  });

  it("fuzz: malformed HTTP requests and WebSocket frame sequences (fast-check, seed 52) leave the process alive, its sessions each answered or closed", async () => {
    const started = { at: Date.now(), cpu: process.cpuUsage(), childCpu: await childCpuMs() };
    const httpCases = fc.sample(httpCase, { seed: 52, numRuns: 300 });
    const wsCases = fc.sample(wsCase, { seed: 52, numRuns: 400 });
    const statuses = new Map<string, number>();
    const outcomes = new Map<WsOutcome | "refused", number>();
    const count = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);
    for (const [i, c] of httpCases.entries()) {
      const status = await runHttpCase(port, c);
      count(statuses, status === undefined ? "none" : String(status));
      if (c.declare === "exact" || c.declare === "chunked") {
        if (c.body.length <= 1 << 20)
          expect(status, `${c.target.join(" ")} ${c.body.subarray(0, 80).toString()}`).toBeDefined();
        if (status !== undefined)
          expect(status, `${c.target.join(" ")} ${c.body.subarray(0, 80).toString()}`).toBeLessThan(500);
      }
      expect(proc.exitCode, `http case ${i}: ${stderr.slice(-2_000)}`).toBeNull();
      if (i % 50 === 0) await expectAlive();
    }
    for (const [i, c] of wsCases.entries()) {
      count(outcomes, await runWsCase(port, c));
      expect(proc.exitCode, `ws case ${i}: ${stderr.slice(-2_000)}`).toBeNull();
      if (i % 50 === 0) await expectAlive();
    }
    // Storms: 200 resets pipelined on one session, 40 sessions resetting at once, 100 HTTP resets at once
    const storm = await openRaw(port);
    storm.socket.write(
      Buffer.concat(
        Array.from({ length: 200 }, (_, i) => textFrame(JSON.stringify({ type: "reset", data: { seed: i } }))),
      ),
    );
    await storm.waitFor(200, 30_000);
    expect(storm.texts.filter((t) => JSON.parse(t).type === "observation")).toHaveLength(200);
    storm.socket.destroy();
    await Promise.all(
      Array.from({ length: 40 }, async (_, s) => {
        const { ask, ws } = await session();
        for (let i = 0; i < 5; i++)
          expect((await ask({ type: "reset", data: { seed: s * 5 + i } })).type).toBe("observation");
        ws.terminate();
      }),
    );
    const resets = await Promise.all(
      Array.from({ length: 100 }, (_, i) => postReset(JSON.stringify({ seed: i })).then((r) => r.status)),
    );
    expect(new Set(resets)).toEqual(new Set([200]));
    await expectAlive();
    await normalEpisode();
    expect(outcomes.get("hung") ?? 0).toBe(0);
    expect(stderr).not.toMatch(/openenv server:/);
    console.log(
      `env-serve fuzz: ${httpCases.length} HTTP cases (status: ${JSON.stringify(Object.fromEntries(statuses))}), ${wsCases.length} WebSocket cases (${JSON.stringify(Object.fromEntries(outcomes))}), 3 storms (200 pipelined resets, 40 sessions × 5, 100 HTTP resets); deaths: ${proc.exitCode === null ? 0 : 1}; ${Date.now() - started.at} ms, CPU: this process ${Math.round((process.cpuUsage(started.cpu).user + process.cpuUsage(started.cpu).system) / 1_000)} ms, env-serve ${(await childCpuMs()) - started.childCpu} ms`,
    );
  }, 300_000);
});

describe("env-serve: sessions expire (item 2)", () => {
  it(`a session with no message for --session-idle-seconds ${IDLE_SECONDS} is closed with 1001 and its reason; one that keeps talking stays`, async () => {
    const idle = await openRaw(port);
    const talking = await openRaw(port);
    idle.socket.write(textFrame(JSON.stringify({ type: "reset", data: { seed: 3 } })));
    const started = Date.now();
    for (let i = 0; Date.now() - started < IDLE_SECONDS * 1_500; i++) {
      talking.socket.write(textFrame(JSON.stringify({ type: "state" })));
      await talking.waitFor(i + 1, 5_000);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(await idle.ended(IDLE_SECONDS * 5_000)).toBe(true);
    expect(idle.close).toEqual({ code: 1001, reason: `idle: no message for ${IDLE_SECONDS} s` });
    expect(talking.close).toBeUndefined();
    talking.socket.destroy();
  }, 60_000);
});

describe("env-serve: reset as an OpenEnv client calls it (item 3)", () => {
  it("a seed alone picks the training task at seed mod n, the same each time; nothing picks one; a task_id wins; an unknown one is UNKNOWN_TASK", async () => {
    const n = trainIds.length;
    const { ask, ws } = await session();
    const taskOf = (a: { data: Record<string, unknown> }) => (a.data.observation as { task: { id: string } }).task.id;
    const seven = await ask({ type: "reset", data: { seed: 7 } });
    expect(taskOf(seven)).toBe(trainIds[7 % n]);
    const again = await ask({ type: "reset", data: { seed: 7 } });
    expect(again).toEqual(seven);
    expect(await ask({ type: "state" })).toMatchObject({ type: "state", data: { task_id: trainIds[7 % n], seed: 7 } });
    expect(taskOf(await ask({ type: "reset", data: { seed: 7 + n } }))).toBe(trainIds[7 % n]);
    expect(taskOf(await ask({ type: "reset", data: { seed: -1 } }))).toBe(trainIds[n - 1]);
    expect(trainIds).toContain(taskOf(await ask({ type: "reset" })));
    expect(trainIds).toContain(taskOf(await ask({ type: "reset", data: {} })));
    expect(taskOf(await ask({ type: "reset", data: { task_id: trainIds[3], seed: 7 } }))).toBe(trainIds[3]);
    expect(await ask({ type: "reset", data: { task_id: "nope", seed: 7 } })).toMatchObject({
      type: "error",
      data: { code: "UNKNOWN_TASK" },
    });
    expect(await ask({ type: "reset", data: { seed: "7" } })).toMatchObject({
      type: "error",
      data: { code: "INVALID_MESSAGE", message: expect.stringMatching(/seed/) },
    });
    ws.close();
    // Over HTTP the same: a seed alone, and no body at all
    const http = await postReset(JSON.stringify({ seed: 7 }));
    expect(http.status).toBe(200);
    expect(((await http.json()) as { observation: { task: { id: string } } }).observation.task.id).toBe(
      trainIds[7 % n],
    );
    expect((await fetch(`${base}/reset`, { method: "POST" })).status).toBe(200);
  });

  it("GET /schema says which arguments reset takes: task_id, seed and episode_id, none required", async () => {
    const schema = (await (await fetch(`${base}/schema`)).json()) as {
      reset: { type: string; properties: Record<string, { anyOf: { type: string }[] }>; required?: string[] };
    };
    expect(schema.reset.type).toBe("object");
    expect(Object.keys(schema.reset.properties).sort()).toEqual(["episode_id", "seed", "task_id"]);
    expect(schema.reset.properties.seed!.anyOf.map((s) => s.type)).toEqual(["integer", "null"]);
    expect(schema.reset.required ?? []).toEqual([]);
  });
});
