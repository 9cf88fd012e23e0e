import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runEpisode } from "@harness-s/core";
import { OpenEnvEnvironment, startOpenEnvServer } from "@harness-s/adapters/openenv";
import {
  APPWORLD_FIXTURE_TASKS,
  FIXTURES_DIR,
  SWE_FIXTURE_INSTANCES,
  appworldH0,
  appworldTaskSets,
  filesOfPatch,
  readSweInstances,
  sweH0,
  sweTaskSets,
} from "@harness-s/envs";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { scriptedCalls } from "../scripted-tool-policy.ts";

// Issue 34, item 4: AppWorld and SWE-Gym served by env-serve over the OpenEnv protocol, read by
// the OpenEnv client, at the local fixture servers env-serve starts (and stops on shutdown).
const outbound = { allowLoopback: true };
const scripted = (calls: readonly [string, Record<string, unknown>][]) => scriptedCalls(calls);
const serveBuiltin = async (env: "appworld" | "swe-gym", log?: (line: string) => void) => {
  const parts = await builtinOpenEnv(
    { env, engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1", appworldServers: 1 },
    log,
  );
  const served = await startOpenEnvServer(parts);
  return {
    url: served.url,
    stop: async () => {
      await served.close();
      await parts.shutdown();
    },
  };
};
const answers = async (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(2_000) })
    .then(() => true)
    .catch(() => false);

describe("env-serve --env appworld|swe-gym over the OpenEnv protocol", () => {
  it("AppWorld: a gold episode succeeds and one without login fails with AppWorld's tags; shutdown stops the fixture server it started", async () => {
    const fixtures: string[] = [];
    const served = await serveBuiltin("appworld", (line) =>
      fixtures.push(...[...line.matchAll(/http:\/\/127\.0\.0\.1:\d+/g)].map((m) => m[0])),
    );
    expect(fixtures).toHaveLength(1);
    expect(await answers(fixtures[0]!)).toBe(true);
    try {
      const env = new OpenEnvEnvironment({ url: served.url, outbound, tools: ["execute", "submit"], submit: "submit" });
      const sets = appworldTaskSets(APPWORLD_FIXTURE_TASKS);
      const task = [...sets.train, ...sets.dev, ...sets.heldout].find((t) => t.id === "todo_add_plumber")!;
      const login =
        'pw = {a["account_name"]: a["password"] for a in apis.supervisor.show_account_passwords()}\ntoken = apis.todo.login(username=apis.supervisor.show_profile()["email"], password=pw["todo"])["access_token"]';
      const gold = await runEpisode(task, appworldH0, 1, {
        env,
        policy: scripted([
          ["execute", { code: login }],
          ["execute", { code: 'apis.todo.add_task(access_token=token, title="Call the plumber", list="home")' }],
          ["execute", { code: "print(apis.todo.show_tasks(access_token=token, page_index=0))" }],
        ]),
      });
      const noLogin = await runEpisode(task, appworldH0, 2, {
        env,
        policy: scripted([["execute", { code: "print(apis.todo.show_tasks())" }]]),
      });
      expect([gold.success, gold.reward, noLogin.success]).toEqual([true, 1, false]);
      expect(noLogin.events).toContain("app:unauthorized");
      expect(noLogin.failureTags).toEqual(expect.arrayContaining(["unauthorized", "login-missing"]));
    } finally {
      await served.stop();
    }
    for (const url of fixtures) expect(await answers(url)).toBe(false);
  }, 120_000);

  it("SWE-Gym: the gold edit resolves the instance; an episode that changes nothing is not resolved", async () => {
    const served = await serveBuiltin("swe-gym");
    try {
      const env = new OpenEnvEnvironment({
        url: served.url,
        outbound,
        tools: ["run", "read", "edit", "write", "submit"],
        submit: "submit",
      });
      const instances = await readSweInstances(SWE_FIXTURE_INSTANCES);
      const sets = sweTaskSets(instances);
      const instance = instances[0]!;
      const task = [...sets.train, ...sets.dev, ...sets.heldout].find((t) => t.id === instance.instance_id)!;
      const [file] = filesOfPatch(instance.patch);
      const content = await readFile(
        join(FIXTURES_DIR, "swe", "repos", instance.repo.split("/")[1]!, "gold", file!),
        "utf8",
      );
      const gold = await runEpisode(task, sweH0, 1, { env, policy: scripted([["write", { path: file!, content }]]) });
      const nothing = await runEpisode(task, sweH0, 2, { env, policy: scripted([["run", { command: "ls" }]]) });
      expect([gold.success, nothing.success]).toEqual([true, false]);
      expect(nothing.failureTags).toEqual(["no-change", "fail-to-pass"]);
      expect(gold.events).toContain("write:ok");
    } finally {
      await served.stop();
    }
  }, 300_000);
});
