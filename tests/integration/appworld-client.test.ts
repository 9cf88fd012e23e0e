import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRng, systemClock, type Task } from "@harness-s/core";
import {
  AppWorldClient,
  AppWorldEnvironment,
  AppWorldServerPool,
  EnvironmentServerError,
  EnvironmentServersBusyError,
} from "@harness-s/envs";

/**
 * A stand-in speaking AppWorld's environment-server protocol: one live task per process (a second
 * `initialize` while one is live is a 409), every `execute` counted, and faults on request: the
 * connection dropped on an `execute` of code containing "die", a malformed answer for "garble".
 */
function stubServer() {
  const state = { live: undefined as string | undefined, executes: 0, closes: 0, codes: [] as string[] };
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (b) => (raw += b));
    req.on("end", () => {
      const body = JSON.parse(raw || "{}") as { task_id?: string; code?: string };
      const send = (status: number, json: unknown) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
      switch (req.url) {
        case "/initialize":
          if (state.live) return send(409, { detail: `task ${state.live} is live` });
          state.live = body.task_id;
          state.codes = [];
          return send(200, { output: { instruction: `do ${body.task_id}`, supervisor: { name: "S" } } });
        case "/execute":
          state.executes++;
          state.codes.push(body.code ?? "");
          if (body.code?.includes("die")) return req.socket.destroy();
          if (body.code?.includes("garble")) return send(200, { output: 42 });
          if (body.code?.includes("apis.spotify"))
            return send(200, {
              output: "Execution failed. Response status code is 401:\n{'message': 'You are either not authorized'}",
            });
          if (body.code?.includes("1/0"))
            return send(200, { output: "Traceback (most recent call last):\nZeroDivisionError: division by zero" });
          return setTimeout(() => send(200, { output: `ran ${body.code}` }), 5);
        case "/evaluate": {
          // The fixture's one test: the task was marked complete (any task, until it is closed).
          const done = state.codes.length === 0 || state.codes.some((c) => c.includes("complete_task"));
          return send(200, {
            output: {
              success: done,
              passes: done ? [{ test: "completed" }] : [],
              failures: done ? [] : [{ test: "completed" }],
              num_tests: 1,
            },
          });
        }
        case "/close":
          state.closes++;
          state.live = undefined;
          return send(200, { output: null });
        default:
          return send(404, {});
      }
    });
  });
  return { server, state };
}

const stubs = Array.from({ length: 2 }, stubServer);
const urls: string[] = [];

beforeAll(async () => {
  for (const s of stubs) {
    await new Promise<void>((r) => s.server.listen(0, "127.0.0.1", r));
    urls.push(`http://127.0.0.1:${(s.server.address() as { port: number }).port}`);
  }
});
afterAll(() => Promise.all(stubs.map((s) => new Promise<void>((r) => s.server.close(() => r())))));

describe("AppWorld's environment server protocol: the client and its pool of servers", () => {
  it("runs more episodes than servers with one live task per server, each initialised, executed, evaluated and closed", async () => {
    const pool = new AppWorldServerPool(urls, systemClock);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        pool.withServer(`task-${i}`, "exp", async (server, instruction) => {
          const out = await server.execute(`task-${i}`, "apis.supervisor.complete_task()");
          return { instruction, out, evaluation: await server.evaluate(`task-${i}`) };
        }),
      ),
    );
    expect(results.map((r) => r.instruction)).toEqual(Array.from({ length: 6 }, (_, i) => `do task-${i}`));
    expect(
      results.every(
        (r) => r.out === "ran apis.supervisor.complete_task()" && r.evaluation.success && r.evaluation.num_tests === 1,
      ),
    ).toBe(true);
    expect(stubs.reduce((n, s) => n + s.state.closes, 0)).toBe(6); // a second initialize on a live server would have been a 409
    expect(pool.busy).toBe(0);
  });

  it("a crashed episode and a server that drops the connection release the server; the code is never run twice", async () => {
    const pool = new AppWorldServerPool([urls[0]!], systemClock);
    await expect(
      pool.withServer("t-crash", "exp", async () => Promise.reject(new Error("the policy crashed"))),
    ).rejects.toThrow("the policy crashed");
    const before = stubs[0]!.state.executes;
    const died = await pool
      .withServer("t-die", "exp", (server) => server.execute("t-die", "die()"))
      .catch((e: unknown) => e);
    expect(died).toBeInstanceOf(EnvironmentServerError);
    expect((died as EnvironmentServerError).code).toBe("ENVIRONMENT_SERVER_FAILED");
    expect(stubs[0]!.state.executes - before).toBe(1); // not retried: it may have run
    // The pool recovered: the same server takes the next task
    expect(await pool.withServer("t-next", "exp", (server) => server.execute("t-next", "ok"))).toBe("ran ok");
  });

  it("refuses an answer that is not the protocol's, and a wait for a server past its bound", async () => {
    const client = new AppWorldClient(urls[1]!);
    await expect(client.execute("t", "garble")).rejects.toThrow(/\/execute .* unexpected answer: output/);
    const pool = new AppWorldServerPool([urls[1]!], systemClock, { waitMs: 50 });
    let release: () => void = () => undefined;
    const holding = pool.withServer("t-hold", "exp", () => new Promise<void>((r) => (release = r)));
    await new Promise((r) => setTimeout(r, 20));
    await expect(pool.withServer("t-wait", "exp", async () => "never")).rejects.toBeInstanceOf(
      EnvironmentServersBusyError,
    );
    release();
    await holding;
    expect(pool.busy).toBe(0);
  });

  it("as an environment: a gold episode succeeds with docs read first; a broken one fails with its failure tags; each releases its server", async () => {
    const pool = new AppWorldServerPool([urls[0]!], systemClock);
    const env = new AppWorldEnvironment(pool, "exp");
    const task = { id: "fix-1", family: "appworld", tags: [] } as unknown as Task;
    const gold = await env.start(task, createRng(1));
    expect(gold.initial.text).toBe("do fix-1");
    expect((await gold.act("execute", { code: "print(apis.api_docs.show_app_descriptions())" })).event).toBe("exec:ok");
    expect((await gold.act("execute", { code: "apis.supervisor.complete_task()" })).event).toBe("exec:ok");
    expect(await gold.finish("submitted")).toEqual({
      reward: 1,
      success: true,
      failureTags: [],
      behaviours: { "docs-first": true, paginated: false, "verified-before-complete": true },
    });
    await gold.close!();
    expect(pool.busy).toBe(0);
    const broken = await env.start(task, createRng(2));
    expect((await broken.act("execute", { code: "apis.spotify.show_playlists()" })).event).toBe("app:unauthorized");
    expect((await broken.act("execute", { code: "1/0" })).event).toBe("exec:error:ZeroDivisionError");
    expect((await broken.act("run_sql", {})).event).toBe("error:tool-call");
    expect(await broken.finish("budget-exhausted")).toEqual({
      reward: 0,
      success: false,
      failureTags: [
        "unauthorized",
        "login-missing",
        "pagination-unread",
        "execution-error",
        "not-completed",
        "tests-failed",
      ],
      behaviours: { "docs-first": false, paginated: false, "verified-before-complete": false },
    });
    await broken.close!();
    await broken.close!(); // closing twice releases once
    expect(pool.busy).toBe(0);
  });
});
