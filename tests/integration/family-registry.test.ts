import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { Task, parseHarnessSpec, runEpisode, type EnvSession, type Environment } from "@harness-s/core";
import { givenPool } from "@harness-s/core/evolution";
import { genericObserver } from "@harness-s/core/gateway";
import { emptyProfile } from "@harness-s/core/profile";
import { statisticalVoters } from "@harness-s/core/voting";
import { OpenAiToolPolicy } from "@harness-s/adapters/llm";
import { OpenEnvEnvironment } from "@harness-s/adapters/openenv";
import { familyFor, familyNames, familyPool, registerFamily } from "@harness-s/envs";
import { LogLinearPolicy } from "@harness-s/policy";
import { GatewayConfig, gatewaySettings } from "../../functions/api/gateway-setup.ts";
import { envEvalCommand } from "../../packages/cli/src/commands/env-eval.ts";
import { startEnvServe } from "../../packages/cli/src/commands/env-serve.ts";
import { EnvServeOptions } from "../../packages/cli/src/declared/serve-options.ts";
import { ExperimentFlags, experiment } from "../../packages/cli/src/declared/experiment.ts";
import { EnvEvalOptions } from "../../packages/cli/src/eval-options.ts";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { startScriptedOpenAi } from "../scripted-openai.ts";
import { scriptedCalls } from "../scripted-tool-policy.ts";

// Issue 53, item 4: benchmark families as a registry. A fifth family registered here, and
// nowhere else, runs through experiment, eval, env-serve and the gateway: nothing else changes.

/** One tool: `submit` with an answer; right when it is the task's answer (an "easy" task takes any submit). */
class ToyEnvironment implements Environment {
  tools(): string[] {
    return ["submit"];
  }
  async start(task: Task): Promise<EnvSession> {
    return {
      initial: { event: "start", facts: [], done: false, text: task.instruction },
      act: async () => ({ event: "noop", facts: [], done: false, text: "nothing happens" }),
      finish: async (reason, args) => {
        const success =
          reason === "submitted" && (task.tags.includes("easy") || String(args?.answer) === String(task.params.answer));
        return { success, reward: success ? 1 : 0, failureTags: success ? [] : ["wrong-answer"], behaviours: {} };
      },
    };
  }
}

const h0 = parseHarnessSpec({ id: "toy-h0", budget: { maxTurns: 3 }, provenance: { direction: "base" } });
const hint = parseHarnessSpec({
  id: "toy-digits",
  budget: { maxTurns: 3 },
  instruction: { systemAppend: "Answer with digits." },
  provenance: { direction: "contract", parent: "toy-h0", hypothesis: "agents answer in words" },
});
const tasks = (split: "train" | "dev" | "heldout", n: number) =>
  Array.from({ length: n }, (_, i) =>
    Task.parse({
      id: `toy-${split}-${i}`,
      family: "toy",
      split,
      instruction: "What is six times seven?",
      tags: [i % 2 ? "easy" : "hard"],
      params: { answer: "42" },
    }),
  );
const sets = { train: tasks("train", 6), dev: tasks("dev", 4), heldout: tasks("heldout", 4) };

const toy = registerFamily({
  name: "toy",
  summary: "toy (one tool)",
  commands: ["experiment", "eval", "env-serve"],
  policy: "own",
  system: "Answer the question with the submit tool.",
  tools: [
    {
      name: "submit",
      action: "submit",
      description: "submit your answer",
      parameters: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
    },
  ],
  h0,
  siblings: [hint],
  open: async () => ({
    base: {
      env: new ToyEnvironment(),
      createPolicy: () => new LogLinearPolicy(),
      voters: statisticalVoters,
      // The trainer keeps profile evidence from step 0: a family training its own policy starts each harness's (here
      // empty).
      instance: async () => ({
        ...sets,
        evolution: {
          ...givenPool(familyPool(toy, "the toy's pool")),
          initialProfiles: { [h0.id]: emptyProfile(h0.id, 0), [hint.id]: emptyProfile(hint.id, 0) },
        },
      }),
    },
    stop: async () => undefined,
  }),
  gateway: async () => ({ observerFor: genericObserver, submitTool: "submit", defaultFamily: "toy" }),
});
const answer42 = () => ({ call: { name: "submit", arguments: JSON.stringify({ answer: "42" }) } });

describe("benchmark families as a registry", () => {
  it("a fifth family registered here runs through experiment, eval, env-serve and the gateway with nothing else touched", async () => {
    // Prepare
    const out = await mkdtemp(join(tmpdir(), "hs-toy-"));
    const model = await startScriptedOpenAi(answer42);
    const deps = memoryApiDeps({
      gateway: await gatewaySettings({ upstream: model.url, pool: "toy", env: "toy", timeoutMs: 10_000 }),
    });
    await seedPool(deps, familyPool(toy, "the toy's pool"), {});
    const api = await startApi(deps);
    const secret = await addKey(deps, "agent", ["gateway"]);
    const served = await startEnvServe(EnvServeOptions.parse({ env: "toy", port: 0 }), () => undefined);
    try {
      // Act: the experiment as the CLI runs it (its flags parsed), eval, an OpenEnv episode, an agent through the
      // gateway
      const flags = ExperimentFlags.parse({
        env: "toy",
        seeds: "1",
        arms: "grpo,harness-s",
        steps: "2",
        train: '{"batchSize":4,"curveEvery":0,"reanchorEvery":2,"reanchorBudget":4}',
        evalSamples: "3",
        out: join(out, "experiment"),
      });
      await experiment.run(flags, []);
      const summary = JSON.parse(await readFile(join(out, "experiment", "summary.json"), "utf8"));
      const pools = JSON.parse(await readFile(join(out, "experiment", "pools.json"), "utf8"));
      const evaluated = await envEvalCommand(
        EnvEvalOptions.parse({ env: "toy", baseUrl: model.url, model: "scripted", out: join(out, "eval") }),
        () => undefined,
      );
      const evalSummary = JSON.parse(await readFile(join(out, "eval", "summary.json"), "utf8"));
      const remote = new OpenEnvEnvironment({
        url: served.url,
        outbound: { allowLoopback: true },
        tools: ["submit"],
        submit: "submit",
      });
      const overOpenEnv = await runEpisode(sets.heldout[0]!, h0, 1, {
        env: remote,
        policy: scriptedCalls([], { answer: "42" }),
      });
      const wrongOverOpenEnv = await runEpisode(sets.heldout[0]!, h0, 2, {
        env: remote,
        policy: scriptedCalls([], { answer: "41" }),
      });
      const headers = { "x-harness-s-episode": "toy-1", "x-harness-s-task-id": sets.dev[0]!.id };
      const client = new OpenAI({
        baseURL: `${api.url}/v1/gateway`,
        apiKey: secret,
        maxRetries: 0,
        defaultHeaders: headers,
      });
      const agent = new OpenAiToolPolicy(client, { model: "scripted", system: toy.system, tools: [...toy.tools!] });
      const viaGateway = await runEpisode(sets.dev[0]!, h0, 1, { env: new ToyEnvironment(), policy: agent });
      const episode = await (
        await fetch(`${api.url}/v1/gateway/episodes/toy-1`, { headers: { authorization: `Bearer ${secret}` } })
      ).json();

      // Assess
      expect(familyNames()).toEqual(["embedded", "dbbench", "appworld", "swe-gym", "toy"]);
      expect(summary.arms.map((a: { name: string }) => a.name)).toEqual(["grpo", "harness-s"]);
      expect(summary.arms[1].perSeed[0].rescue.triggered).toBeGreaterThan(0);
      expect(pools["1"].siblings.map((s: { id: string }) => s.id)).toEqual(["toy-digits"]);
      expect(await readFile(join(out, "experiment", "report.md"), "utf8")).toMatch(/grpo/);
      expect(evaluated).toEqual({ attempts: 14 * 3, errored: 0 });
      expect(evalSummary).toMatchObject({ env: "toy", harness: "toy-h0", passAt3: 1 });
      expect([overOpenEnv.success, wrongOverOpenEnv.success]).toEqual([true, false]);
      expect(viaGateway.success).toBe(true);
      expect(episode.harnessId).toMatch(/^toy-/);
      expect(model.requests.at(-1)!.tools!.map((t) => t.function.name)).toEqual(["submit"]);
      expect(GatewayConfig.safeParse({ upstream: model.url, pool: "toy", env: "toy" }).success).toBe(true);
    } finally {
      await served.stop();
      await api.close();
      await model.close();
    }
  }, 120_000);

  it("an unknown family's error lists the known ones; a name is registered once; a family's flags are its own", () => {
    const unknown = ExperimentFlags.safeParse({ env: "nope" });
    expect(unknown.error!.issues[0]!.message).toMatch(
      /unknown environment "nope" \(experiment: embedded, dbbench, appworld, swe-gym/,
    );
    expect(
      EnvEvalOptions.safeParse({ env: "dbbench", baseUrl: "http://127.0.0.1:1/v1", model: "m" }).error!.issues[0]!
        .message,
    ).toMatch(/dbbench has no eval/);
    expect(
      GatewayConfig.safeParse({ upstream: "http://127.0.0.1:1/v1", pool: "p", env: "embedded" }).error!.issues[0]!
        .message,
    ).toMatch(/unknown gateway environment "embedded"/);
    expect(() => familyFor("nope")).toThrow(/unknown environment "nope"/);
    expect(() => registerFamily({ ...toy })).toThrow(/already registered/);
    expect(() =>
      registerFamily({
        ...toy,
        name: "toy-2",
        flags: () => ({ appworldServers: familyFor("appworld").flags!("eval").appworldServers! }),
      }),
    ).toThrow(/eval already has the flags appworldServers/);
  });
});
