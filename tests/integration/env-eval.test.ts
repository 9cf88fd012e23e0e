import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { envEvalCommand } from "../../packages/cli/src/commands/env-eval.ts";
import { startScriptedOpenAi, type ChatRequest, type ScriptedReply } from "../scripted-openai.ts";

// Issue 34, item 4: `harness-s eval --env appworld`, an OpenAI-compatible agent on the fixture
// tasks under one harness, as `dbbench eval` is for DBBench.
const LOGIN =
  'pw = {a["account_name"]: a["password"] for a in apis.supervisor.show_account_passwords()}\ntoken = apis.todo.login(username=apis.supervisor.show_profile()["email"], password=pw["todo"])["access_token"]';
const PLAN = [
  LOGIN,
  'apis.todo.add_task(access_token=token, title="Call the plumber", list="home")',
  "print(apis.todo.show_tasks(access_token=token, page_index=0))",
];
/** A model that plays the plumber task's solution whatever it is asked. */
const plumber = (req: ChatRequest): ScriptedReply => {
  const turn = req.messages.filter((m) => m.role === "assistant").length;
  return turn < PLAN.length
    ? { call: { name: "execute", arguments: JSON.stringify({ code: PLAN[turn] }) } }
    : { call: { name: "complete_task", arguments: "{}" } };
};
const silent = () => undefined;

describe("harness-s eval --env appworld (the local AppWorld-protocol servers)", () => {
  it("scores each task's attempts under the harness asked for and writes the summary and report; errors at the model endpoint are counted, not fatal", async () => {
    const model = await startScriptedOpenAi(plumber);
    const out = await mkdtemp(join(tmpdir(), "hs-env-eval-"));
    try {
      const ran = await envEvalCommand(
        {
          env: "appworld",
          baseUrl: model.url,
          model: "scripted",
          attempts: 3,
          out,
          harness: "appworld-relogin",
          appworldServers: 2,
        },
        silent,
      );
      const summary = JSON.parse(await readFile(join(out, "summary.json"), "utf8"));
      expect(ran).toEqual({ attempts: 12, errored: 0 });
      expect(summary.harness).toBe("appworld-relogin");
      const solved = Object.fromEntries(
        summary.results.map((r: { id: string; successes: number }) => [r.id, r.successes]),
      );
      expect(solved).toEqual({ todo_add_plumber: 3, todo_groceries: 0, wallet_alice_total: 0, todo_open_work: 0 });
      expect(summary.passAt3).toBeCloseTo(0.25);
      expect(summary.behaviours["verified-before-complete"]).toBe(1);
      expect(await readFile(join(out, "report.md"), "utf8")).toMatch(/\| todo_add_plumber \| 3\/3 \| 1\.00 \|/);
      // The endpoint gone: every attempt errored and counted, the summary still written
      await model.close();
      const down = await envEvalCommand(
        { env: "appworld", baseUrl: model.url, model: "scripted", attempts: 3, limit: 1, out, timeoutSeconds: 2 },
        silent,
      );
      expect(down).toEqual({ attempts: 3, errored: 3 });
      expect(JSON.parse(await readFile(join(out, "summary.json"), "utf8")).results[0].failureTags).toEqual([
        "rollout-error",
      ]);
      await expect(
        envEvalCommand({ env: "appworld", baseUrl: model.url, model: "m", out, harness: "nope" }, silent),
      ).rejects.toThrow(/no appworld harness nope \(one of appworld-h0/);
    } finally {
      await model.close().catch(() => undefined);
    }
  }, 120_000);
});
