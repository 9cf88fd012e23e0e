import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRng, runEpisode, systemClock, type Policy } from "@harness-s/core";
import {
  APPWORLD_FIXTURE_TASKS,
  AppWorldClient,
  AppWorldEnvironment,
  AppWorldServerPool,
  SERVER_FAILED_EVENT,
  appworldH0,
  appworldSiblings,
  appworldTaskSets,
  appworldObserver,
  startFixtureServer,
  type FixtureServer,
} from "@harness-s/envs";
import { environmentSaid, readThroughGateway } from "../observer-replay.ts";
import { scriptedCalls } from "../scripted-tool-policy.ts";

/** Executes `codes` in turn, then submits with `answer`. */
const scripted = (codes: readonly string[], answer?: unknown) =>
  scriptedCalls(
    codes.map((code) => ["execute", { code }] as const),
    answer === undefined ? {} : { answer },
  );

const LOGIN = (app: string) =>
  `pw = {a["account_name"]: a["password"] for a in apis.supervisor.show_account_passwords()}\ntoken = apis.${app}.login(username=apis.supervisor.show_profile()["email"], password=pw["${app}"])["access_token"]`;
const ALL = (api: string) =>
  `items = []\npage = 0\nwhile True:\n    got = apis.${api}(access_token=token, page_index=page)\n    if not got:\n        break\n    items += got\n    page += 1`;

/** The gold scripts: log in, read every page, change or answer, read the change back. */
const GOLD: Record<string, { codes: string[]; answer?: unknown }> = {
  todo_groceries: {
    codes: [
      "print(apis.api_docs.show_api_descriptions(app_name='todo'))",
      LOGIN("todo"),
      `${ALL("todo.show_tasks")}\nfor t in items:\n    if t["list"] == "groceries" and not t["done"]:\n        apis.todo.mark_done(access_token=token, task_id=t["id"])`,
      `${ALL("todo.show_tasks")}\nprint([t for t in items if t["list"] == "groceries"])`,
    ],
  },
  todo_add_plumber: {
    codes: [
      LOGIN("todo"),
      'apis.todo.add_task(access_token=token, title="Call the plumber", list="home")',
      `${ALL("todo.show_tasks")}\nprint(items[-1])`,
    ],
  },
  wallet_alice_total: {
    codes: [
      LOGIN("wallet"),
      `${ALL("wallet.show_transactions")}\nprint(sum(t["amount"] for t in items if t["sender"] == "Alice"))`,
    ],
    answer: 60.75,
  },
  todo_open_work: {
    codes: [
      LOGIN("todo"),
      `${ALL("todo.show_tasks")}\nprint(sum(1 for t in items if t["list"] == "work" and not t["done"]))`,
    ],
    answer: 4,
  },
};

describe("AppWorld through its own protocol, against the local AppWorld-protocol server (bubblewrap-confined)", () => {
  let servers: FixtureServer[] = [];
  const tasks = appworldTaskSets(APPWORLD_FIXTURE_TASKS);
  const all = [...tasks.train, ...tasks.dev, ...tasks.heldout];
  const stats = async (url: string) =>
    (await (await fetch(`${url}/stats`)).json()) as {
      initialized: number;
      executes: number;
      closed: number;
      live: string | null;
    };

  beforeAll(async () => {
    servers = await Promise.all(
      [0, 1].map(() => startFixtureServer("appworld/server.py", { extraArgs: ["--execute-seconds", "3"] })),
    );
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it("a scripted gold policy solves every fixture task under H0 and under every sibling", async () => {
    // Prepare
    expect(servers.every((s) => s.sandbox === "bwrap")).toBe(true);
    const env = new AppWorldEnvironment(
      new AppWorldServerPool(
        servers.map((s) => s.url),
        systemClock,
      ),
      "gold",
    );
    // Act
    const rollouts = await Promise.all(
      all.flatMap((task) =>
        [appworldH0, ...appworldSiblings].map((h, i) =>
          runEpisode(task, h, i, { env, policy: scripted(GOLD[task.id]!.codes, GOLD[task.id]!.answer) }),
        ),
      ),
    );
    // Assess
    expect(all.map((t) => t.id).sort()).toEqual(Object.keys(GOLD).sort());
    for (const r of rollouts)
      expect({ id: r.id, success: r.success, reward: r.reward, tags: r.failureTags }).toEqual({
        id: r.id,
        success: true,
        reward: 1,
        tags: [],
      });
    expect(rollouts.find((r) => r.taskId === "todo_groceries" && r.harnessId === "appworld-h0")!.behaviours).toEqual({
      "docs-first": true,
      paginated: true,
      "verified-before-complete": true,
    });
    // The api-docs sibling's preview came from the task's own docs app
    const docs = rollouts.find((r) => r.harnessId === "appworld-api-docs")!;
    expect(docs.steps[0]!.observation.text).toMatch(
      /Apps \(apis\.api_docs\.show_app_descriptions\(\)\):\n\[\{'name': 'todo'/,
    );
  }, 120_000);

  it("broken policies fail with the failure tags of what they got wrong", async () => {
    const env = new AppWorldEnvironment(new AppWorldServerPool([servers[0]!.url], systemClock), "broken");
    const task = (id: string) => all.find((t) => t.id === id)!;
    // No login: the app answers 401
    const noLogin = await runEpisode(task("todo_groceries"), appworldH0, 1, {
      env,
      policy: scripted(["print(apis.todo.show_tasks())"]),
    });
    // Logged in, but only the first page: the groceries on later pages stay open
    const firstPage = await runEpisode(task("todo_groceries"), appworldH0, 2, {
      env,
      policy: scripted([
        LOGIN("todo"),
        'for t in apis.todo.show_tasks(access_token=token):\n    if t["list"] == "groceries":\n        apis.todo.mark_done(access_token=token, task_id=t["id"])',
      ]),
    });
    // A wrong answer after an execution error, under the verification sibling (no change, so its gate stays open)
    const wrong = await runEpisode(
      task("wallet_alice_total"),
      appworldSiblings.find((h) => h.id === "appworld-verify-before-complete")!,
      3,
      {
        env,
        policy: scripted([LOGIN("wallet"), "1/0"], 12.5),
      },
    );
    expect([noLogin, firstPage, wrong].map((r) => ({ success: r.success, tags: r.failureTags }))).toEqual([
      { success: false, tags: ["unauthorized", "login-missing", "pagination-unread", "tests-failed"] },
      { success: false, tags: ["pagination-unread", "tests-failed"] },
      { success: false, tags: ["execution-error", "tests-failed"] },
    ]);
    expect(noLogin.events).toContain("app:unauthorized");
    // The task's code runs within a memory limit (1 GB of address space) and cannot reach the network
    const limits = await runEpisode(task("todo_open_work"), appworldH0, 4, {
      env,
      policy: scripted([
        "x = bytearray(2 * 1024**3)",
        "import socket\nsocket.create_connection(('127.0.0.1', 3306), timeout=2)",
      ]),
    });
    expect(limits.steps.slice(0, 2).map((s) => s.result)).toEqual([
      "exec:error:MemoryError",
      "exec:error:ConnectionRefusedError",
    ]);
    expect(firstPage.reward).toBeCloseTo(2 / 3); // completed, nothing else changed, the groceries not all done
  }, 60_000);

  it("the gateway's AppWorld observer reads the same events and facts from the outputs as the environment gives, a change undoing state:verified", async () => {
    // Prepare: gold, no login, first page only, and an execution error, each run at the server
    const env = new AppWorldEnvironment(new AppWorldServerPool([servers[0]!.url], systemClock), "observer");
    const task = (id: string) => all.find((t) => t.id === id)!;
    const episodes = [
      { id: "todo_groceries", codes: GOLD.todo_groceries!.codes },
      { id: "todo_groceries", codes: ["print(apis.todo.show_tasks())"] },
      {
        id: "todo_add_plumber",
        codes: [LOGIN("todo"), 'apis.todo.add_task(access_token=token, title="Call the plumber", list="home")', "1/0"],
      },
    ];
    const rollouts = [];
    for (const [i, e] of episodes.entries())
      rollouts.push(await runEpisode(task(e.id), appworldH0, i, { env, policy: scripted(e.codes) }));
    // Act
    const read = await Promise.all(rollouts.map((r) => readThroughGateway(r, task(r.taskId), appworldObserver)));
    // Assess
    expect(read).toEqual(rollouts.map(environmentSaid));
    expect(read[0]!.map((s) => s.facts.includes("state:verified"))).toEqual([true, true, false, true]);
    expect(read[1]![0]!.event).toBe("app:unauthorized");
    expect(read[2]!.map((s) => s.event)).toEqual(["exec:ok", "exec:ok", "exec:error:ZeroDivisionError"]);
  }, 60_000);

  it("the re-login sibling's note follows a 401; the verification sibling holds submit until a change is read back", async () => {
    const env = new AppWorldEnvironment(new AppWorldServerPool([servers[1]!.url], systemClock), "hooks");
    const relogin = appworldSiblings.find((h) => h.id === "appworld-relogin")!;
    const verify = appworldSiblings.find((h) => h.id === "appworld-verify-before-complete")!;
    const task = all.find((t) => t.id === "todo_add_plumber")!;
    const noted = await runEpisode(task, relogin, 1, { env, policy: scripted(["apis.todo.show_tasks()"]) });
    expect(noted.steps[1]!.observation.notes!.join("\n")).toMatch(
      /answered 401: get the password with apis\.supervisor\.show_account_passwords/,
    );
    const unverified = await runEpisode(task, verify, 2, {
      env,
      policy: scripted([
        LOGIN("todo"),
        'apis.todo.add_task(access_token=token, title="Call the plumber", list="home")',
      ]),
    });
    expect(unverified.steps.map((s) => s.result)).toContain("gate:state:verified");
  }, 60_000);

  it("a server killed mid-episode is a failed rollout with its error, the server goes back to the pool, and a restarted one serves again; no code runs twice", async () => {
    // Prepare: one server, an episode whose second step finds it dead
    const victim = await startFixtureServer("appworld/server.py");
    const port = Number(new URL(victim.url).port);
    const pool = new AppWorldServerPool([victim.url], systemClock);
    const env = new AppWorldEnvironment(pool, "faults");
    const task = all.find((t) => t.id === "todo_add_plumber")!;
    const script = scripted([LOGIN("todo"), "print('never runs')"]);
    const killer: Policy = {
      ...script,
      act: async (obs) => {
        if (obs.history?.length === 2) victim.process.kill("SIGKILL"); // after the login ran
        return script.act(obs, createRng(0));
      },
    };
    // Act
    const died = await runEpisode(task, appworldH0, 1, { env, policy: killer });
    const restarted = await startFixtureServer("appworld/server.py", { port });
    const after = await runEpisode(task, appworldH0, 2, { env, policy: scripted(GOLD.todo_add_plumber!.codes) });
    // A call that outlives the client's timeout is not retried: the server ran it once
    const slow = new AppWorldClient(restarted.url, { callTimeoutMs: 300 });
    await slow.initialize("todo_open_work", "faults");
    await expect(slow.execute("todo_open_work", "import time\ntime.sleep(1)")).rejects.toThrow(/\/execute/);
    await new Promise((r) => setTimeout(r, 1200));
    const seen = await stats(restarted.url);
    await slow.close("todo_open_work");
    await restarted.stop();
    // Assess
    expect({ success: died.success, tags: died.failureTags, last: died.events.at(-2) }).toEqual({
      success: false,
      tags: ["server-failed"],
      last: SERVER_FAILED_EVENT,
    });
    expect(died.steps.at(-1)!.resultText).toMatch(/\/execute at http:\/\/127\.0\.0\.1:\d+ failed/);
    expect(pool.busy).toBe(0);
    expect(after.success).toBe(true);
    expect(seen.executes).toBe(after.steps.length - 1 + 1 + 1); // the gold episode's executions, its complete_task, and the slow one once
  }, 90_000);
});
