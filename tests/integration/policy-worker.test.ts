import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ArmConfig, TrainConfig, trainArm } from "@harness-s/core/training";
import {
  ConflictError,
  createPool,
  createRng,
  parseHarnessSpec,
  type HarnessSpec,
  runEpisode,
  systemClock,
  type Environment,
  type Policy,
  type Task,
} from "@harness-s/core";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import {
  ExperimentConfig,
  ExperimentSummary,
  runExperiment,
  type ExperimentDeps,
  type SeedBaseline,
  type UnitCheckpoint,
} from "@harness-s/core/experiment";
import { datumFromTurns, type SampleResponseV2 } from "@harness-s/core/protocol";
import { groupAdvantages } from "@harness-s/core/grpo";
import { statisticalVoters, VoterPanel, route, routerOptions } from "@harness-s/core/voting";
import { givenPool } from "@harness-s/core/evolution";
import { GatewayEpisodes, GatewayTrajectory, genericObserver } from "@harness-s/core/gateway";
import { envelope } from "@harness-s/core/messaging";
import { rolloutRunners } from "@harness-s/core/dispatch";
import { INVALID_TOOL_CALL, OpenAiUpstream, NO_TOOL_CALL, votersFromPanel } from "@harness-s/adapters/llm";
import { MemoryPoolStore, MemoryRolloutStore, MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import {
  TokenTrainer,
  TokenPolicyClient,
  policyProtocol,
  seedOfUnit,
  tokenUnitPolicies,
} from "@harness-s/adapters/policy";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { makeSqsRecord } from "../factories.ts";
import { dispatchEndpoints, sharedTokenPolicy } from "../../functions/policy-endpoint.ts";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { EmbeddedEnvironment, TextEnvironment, buildSuite, embeddedH0, embeddedToolSchemas } from "@harness-s/envs";
import { startPolicyWorker } from "../../packages/cli/src/policy-worker.ts";
import { sharedPolicyWorker } from "../run-policy-worker.ts";
import OpenAI from "openai";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { startLambdaGateway } from "../gateway-lambda.ts";
import type { ApiDeps } from "../../functions/api/deps.ts";

// The reference policy worker (Python) on loopback with the tiny model, driven over protocol v2
// from TypeScript: the integration run's shared worker (tests/shared-policy-worker.ts, which makes
// the venv when it is missing), and workers of this file's own where one is killed.
const TOKEN = inject("policyWorker").token;
const LORA = { rank: 8, alpha: 16, targets: ["q_proj", "v_proj"] };
let worker: { url: string };
let client: TokenPolicyClient;

beforeAll(async () => {
  worker = await sharedPolicyWorker();
  client = new TokenPolicyClient(worker.url, { token: TOKEN, clock: systemClock });
}, 600_000);

const first = (episode: string, seed: number, maxTokens = 8) => ({
  episode_id: episode,
  messages: [{ role: "user" as const, content: "say yes" }],
  sampling: { temperature: 1, top_p: 1, max_tokens: maxTokens, seed },
});
const datum = (s: SampleResponseV2, advantage: number, id = "s") =>
  datumFromTurns(
    id,
    "g",
    [{ promptIds: s.prompt_ids, completionIds: s.completion.ids, logprobs: s.completion.logprobs, trained: true }],
    advantage,
  );

describe("protocol v2 from TypeScript, against the worker on loopback", () => {
  it("creates idempotently, samples with per-token log-probabilities, renders, scores, updates, versions and deletes", async () => {
    const created = await client.create("p-basic", { base_model: "tiny", lora: LORA });
    expect(created.version).toBe(0);
    expect((await client.create("p-basic", { base_model: "tiny", lora: LORA })).version).toBe(0);
    await expect(client.create("p-basic", { base_model: "tiny", lora: { ...LORA, rank: 4 } })).rejects.toBeInstanceOf(
      ConflictError,
    );
    const s = await client.sample("p-basic", first("e1", 1));
    expect(s.completion.ids.length).toBe(s.completion.logprobs.length);
    expect(s.policy_version).toBe(0);
    expect(
      await client.render("p-basic", { messages: [{ role: "user", content: "say yes" }], add_generation_prompt: true }),
    ).toEqual(s.prompt_ids);
    const next = await client.sample("p-basic", {
      episode_id: "e1",
      append: [{ role: "tool", content: "ok" }],
      sampling: { temperature: 1, top_p: 1, max_tokens: 4, seed: 2 },
    });
    const d = datumFromTurns(
      "s1",
      "g1",
      [
        { promptIds: s.prompt_ids, completionIds: s.completion.ids, logprobs: s.completion.logprobs, trained: true },
        {
          promptIds: next.prompt_ids,
          completionIds: next.completion.ids,
          logprobs: next.completion.logprobs,
          trained: true,
        },
      ],
      1,
    );
    // The ids trained on are exactly the ids sampled, in order; the mask is 1 on sampled tokens only.
    expect(d.ids).toEqual([...s.prompt_ids, ...s.completion.ids, ...next.prompt_ids, ...next.completion.ids]);
    expect(d.loss_mask.reduce<number>((a, b) => a + b, 0)).toBe(s.completion.ids.length + next.completion.ids.length);
    const [scored] = await client.score("p-basic", { sequences: [{ ids: d.ids }] });
    const sampled = d.behaviour_logprobs.filter((_, i) => d.loss_mask[i] === 1);
    const rescored = scored!.filter((_, i) => d.loss_mask[i] === 1);
    expect(Math.max(...sampled.map((lp, i) => Math.abs(lp - rescored[i]!)))).toBeLessThan(1e-4);
    const job = await client.update("p-basic", "u1", { base_version: 0, datums: [d], loss: {}, optim: { lr: 1e-2 } });
    expect(job).toMatchObject({ status: "done", version: 1 });
    expect(job.metrics!.tokens).toBe(sampled.length);
    expect(job.metrics!.sampler_trainer_logprob_absdiff).toBeLessThan(1e-4);
    expect((await client.state("p-basic")).version).toBe(1);
    await client.remove("p-basic");
    await expect(client.state("p-basic")).rejects.toThrow(/not found/);
  }, 60_000);

  it("a retried update with the same key is the same job; another update on the old base is 409", async () => {
    await client.create("p-retry", { base_model: "tiny", lora: LORA });
    const s = await client.sample("p-retry", first("e", 3));
    const body = { base_version: 0, datums: [datum(s, 1)], loss: {}, optim: { lr: 1e-2 } };
    const a = await client.submitUpdate("p-retry", "key-1", body);
    const b = await client.submitUpdate("p-retry", "key-1", body);
    expect(b.update_id).toBe(a.update_id);
    expect(b.created).toBe(false);
    await client.update("p-retry", "key-1", body);
    await expect(client.submitUpdate("p-retry", "key-2", body)).rejects.toBeInstanceOf(StalePolicyVersionError);
    await expect(client.sample("p-retry", { ...first("old", 1), version: { exact: 0 } })).rejects.toBeInstanceOf(
      StalePolicyVersionError,
    );
    expect((await client.sample("p-retry", { ...first("new", 1), version: { exact: 1 } })).policy_version).toBe(1);
  }, 60_000);

  it("a generated tool call the parser cannot read comes back as a parse error, never a crash", async () => {
    await client.create("p-parse", { base_model: "tiny", lora: LORA });
    let calls = 0;
    let errors = 0;
    for (let seed = 0; seed < 60; seed++) {
      const s = await client.sample("p-parse", first(`p${seed}`, seed, 48));
      if (s.completion.text.includes("<tool_call>")) {
        calls++;
        if (s.completion.parse_error) errors++;
      } else expect(s.completion.parse_error).toBeUndefined();
    }
    // The untrained tiny model writes <tool_call> now and then, never a valid call after it.
    expect(calls).toBeGreaterThan(0);
    expect(errors).toBe(calls);
  }, 120_000);
});

describe("learning through TS GRPO → worker updates (toy task: a target token appears)", () => {
  // Reward 1 when a completion of 4 tokens holds one of 30 target ids (of 400): ~27% at random.
  const target = (id: number) => id >= 300 && id < 330;
  const reward = (s: SampleResponseV2) => (s.completion.ids.some(target) ? 1 : 0);
  // lm_head is adapted too: the tiny model's final RMSNorm and small random head leave adapters on
  // attention and MLP alone almost no reach over the next-token distribution (measured: the target
  // mass moved 0.076 → 0.083 in 8 updates without it, → 0.64 in 4 with it).
  const ALL_LINEAR = { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj", "lm_head"] };
  const successRate = async (pid: string, seeds: number[]) => {
    let hits = 0;
    for (const seed of seeds) hits += reward(await client.sample(pid, first(`eval-${seed}`, seed, 4)));
    return hits / seeds.length;
  };
  const train = async (pid: string, sign: 1 | -1, steps: number, runSeed: number) => {
    for (let step = 0; step < steps; step++) {
      const version = (await client.state(pid)).version;
      const group = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          client.sample(pid, {
            ...first(`${pid}-${step}-${i}`, runSeed * 1_000_000 + step * 100 + i, 4),
            version: { exact: version },
          }),
        ),
      );
      const advantages = groupAdvantages(group.map(reward));
      if (advantages.every((a) => a === 0)) continue;
      const datums = group.map((s, i) => datum(s, sign * advantages[i]!, `s${i}`));
      await client.update(pid, `${pid}-step-${step}`, {
        base_version: version,
        datums,
        loss: { clip_high: 0.28 },
        optim: { lr: 5e-2, epochs: 2 },
      });
    }
  };

  it("raises the success rate above the untrained model's on every seed; flipped advantages lower it", async () => {
    const rows: { seed: number; before: number; trained: number; flipped: number }[] = [];
    for (const seed of [1, 2, 3]) {
      const evalSeeds = Array.from({ length: 48 }, (_, i) => 50_000 + seed * 1000 + i);
      await client.create(`up-${seed}`, { base_model: "tiny", lora: ALL_LINEAR, seed });
      await client.create(`down-${seed}`, { base_model: "tiny", lora: ALL_LINEAR, seed });
      const before = await successRate(`up-${seed}`, evalSeeds);
      await train(`up-${seed}`, 1, 8, seed);
      await train(`down-${seed}`, -1, 8, seed);
      rows.push({
        seed,
        before,
        trained: await successRate(`up-${seed}`, evalSeeds),
        flipped: await successRate(`down-${seed}`, evalSeeds),
      });
    }
    console.log(`toy GRPO through the worker (success rate on 48 fixed samples): ${JSON.stringify(rows)}`);
    for (const r of rows) {
      expect(r.trained).toBeGreaterThan(r.before + 0.1);
      expect(r.flipped).toBeLessThan(r.before);
    }
  }, 600_000);
});

describe("TokenTrainer: the Policy port over protocol v2, on the embedded suite's text rendering", () => {
  const env = new TextEnvironment(new EmbeddedEnvironment());
  const task = buildSuite({ seed: 1, cueRate: 0.2, protocol: "test" }).train[0]!;
  const policy = () =>
    new TokenTrainer(client, {
      policyId: `tp-${Math.random().toString(36).slice(2, 8)}`,
      baseModel: "tiny",
      lora: LORA,
      seed: 1,
      system: "Call one tool per turn.",
      toolSchemas: embeddedToolSchemas,
      maxTokens: 12,
    });

  it("runs an episode turn by turn at the worker and trains on exactly the sampled ids (a forced submit has none)", async () => {
    const p = policy();
    // A harness that blocks the first tool call (intercepted) and forces submit near the end (forced).
    const tools = env.tools(task).filter((t) => t !== "submit");
    const harness = parseHarnessSpec({
      ...embeddedH0,
      id: "h-test",
      budget: { ...embeddedH0.budget, maxTurns: 5, forceSubmitAt: 1 },
      preAction: tools.map((action) => ({ action, requires: ["never-known"], mode: "block", maxBlocks: 1 })),
    });
    const rollout = await runEpisode(task, harness, 7, { env, policy: p });
    expect((await client.state(p.id)).open_episodes).toBe(0); // closed at the worker when it ended
    const sampled = rollout.steps.filter((s) => !s.forced);
    expect(sampled.length).toBeGreaterThan(0);
    for (const s of sampled) {
      expect(s.tokens).toBeDefined();
      expect(
        [INVALID_TOOL_CALL, NO_TOOL_CALL, ...env.tools(task)].includes(s.action) || s.action.startsWith("unknown:"),
      ).toBe(true);
    }
    expect(rollout.steps.at(-1)).toMatchObject({ forced: true, action: "submit" });
    expect(rollout.steps.at(-1)!.tokens).toBeUndefined();
    const [d] = await p.datums({
      samples: [{ rollout, advantage: 1 }],
      settings: { rescueContext: "as-generated", maskIntercepted: true },
    });
    expect(d!.ids).toEqual(sampled.flatMap((s) => [...s.tokens!.promptIds, ...s.tokens!.completionIds]));
    const trained = sampled.filter((s) => !s.intercepted).reduce((n, s) => n + s.tokens!.completionIds.length, 0);
    expect(d!.loss_mask.reduce<number>((a, b) => a + b, 0)).toBe(trained);
    const result = await p.update({
      baseVersion: 0,
      samples: [{ rollout, advantage: 1 }],
      settings: {
        learningRate: 0.1,
        clipEpsilon: 0.2,
        klCoef: 0,
        epochs: 1,
        rescueContext: "as-generated",
        maskIntercepted: true,
      },
    });
    expect(result.version).toBe(1);
    expect(p.version()).toBe(1);
    const again = await runEpisode(task, embeddedH0, 8, { env, policy: p });
    expect(again.steps.filter((s) => s.tokens).every((s) => s.tokens!.version === 1)).toBe(true);
    await p.release();
  }, 120_000);

  it("harness-s experiment --policy worker runs every arm for 1 step on 1 seed (re-anchoring included) and writes the usual report", async () => {
    const out = await mkdtemp(join(tmpdir(), "hs-worker-"));
    const train = JSON.stringify({
      batchSize: 2,
      groupSize: 2,
      curveEvery: 0,
      auditEvery: 0,
      reanchorBudget: 2,
      reanchorEvery: 1,
    });
    await promisify(execFile)(
      "node",
      [
        "packages/cli/bin/harness-s.js",
        "experiment",
        "--quick",
        "--seeds",
        "1",
        "--steps",
        "1",
        "--train",
        train,
        "--eval-tasks",
        "1",
        "--policy",
        "worker",
        "--policy-url",
        worker.url,
        "--policy-token",
        TOKEN,
        "--policy-max-tokens",
        "8",
        "--profile-budget",
        "3",
        "--out",
        out,
      ],
      { timeout: 600_000, maxBuffer: 16 << 20 },
    );
    const summary = ExperimentSummary.parse(JSON.parse(await readFile(join(out, "summary.json"), "utf8")));
    expect(summary.arms.map((a) => a.name)).toEqual([
      "grpo",
      "grpo-budget",
      "harness-s",
      "harness-s-random",
      "harness-s-noreanchor",
      "harness-s-single-voter",
    ]);
    expect(summary.arms.every((a) => a.perSeed[0]!.rollouts > 0)).toBe(true);
    expect(summary.arms.find((a) => a.name === "harness-s")!.perSeed[0]!.rolloutBreakdown.reanchor).toBeGreaterThan(0);
    expect(await readFile(join(out, "report.md"), "utf8")).toContain("## Acceptance figures");
    // the pool's initial profiles were measured with the token policy, within the budget of 3 rollouts
    const profiles = JSON.parse(await readFile(join(out, "token-profiles.json"), "utf8")) as Record<
      string,
      Record<string, { turns: { attempts: number } }>
    >;
    const spent = Object.values(profiles["1"]!).reduce((n, p) => n + p.turns.attempts, 0);
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(3);
  }, 600_000);
});

// A one-turn text task: success when the reply holds a digit (~18% for the untrained model).
const digitEnv: Environment = {
  tools: () => ["submit"],
  start: async () => {
    let said = false;
    return {
      initial: { event: "start", facts: [], done: false, text: "Reply with a digit." },
      act: async (_action, args) => {
        said = /\d/.test(String(args?.content ?? ""));
        return { event: said ? "digit" : "no-digit", facts: [], done: true, text: "" };
      },
      finish: async () => ({
        reward: said ? 1 : 0,
        success: said,
        failureTags: said ? [] : ["no-digit"],
        behaviours: {},
      }),
    };
  },
};
const tasks: Task[] = Array.from({ length: 8 }, (_, i) => ({
  id: `digit-${i}`,
  family: "toy",
  split: "train",
  instruction: "Answer with one digit.",
  tags: ["toy"],
  requirements: [],
  cues: [],
  params: {},
}));
const h0 = parseHarnessSpec({ id: "toy-h0", budget: { maxTurns: 1 }, provenance: { direction: "base" } });
const pool = createPool("toy", h0, [
  parseHarnessSpec({ id: "toy-sib", budget: { maxTurns: 1 }, provenance: { direction: "recovery", parent: "toy-h0" } }),
]);
describe("learning through the full TS trainer (trainArm → TokenTrainer → worker)", () => {
  const tokenPolicy = (id: string, seed: number) =>
    new TokenTrainer(client, {
      policyId: id,
      baseModel: "tiny",
      lora: { rank: 8, alpha: 16, targets: ["q_proj", "v_proj", "o_proj", "down_proj", "lm_head"] },
      seed,
      system: "Answer.",
      toolSchemas: () => [],
      maxTokens: 4,
      learningRate: 5e-2,
    });
  const flipped = (p: Policy): Policy => ({
    version: () => p.version(),
    act: (o, r) => p.act(o, r),
    update: (b) => p.update({ ...b, samples: b.samples.map((x) => ({ ...x, advantage: -x.advantage })) }),
  });
  const rate = async (p: Policy, seed: number) => {
    let hits = 0;
    for (let i = 0; i < 48; i++)
      hits += (await runEpisode(tasks[i % tasks.length]!, h0, 90_000 + seed * 1000 + i, { env: digitEnv, policy: p }))
        .success
        ? 1
        : 0;
    return hits / 48;
  };
  const train = (p: Policy, seed: number) =>
    trainArm(
      ArmConfig.parse({ name: "grpo", rescue: "none" }),
      TrainConfig.parse({
        steps: 6,
        batchSize: 4,
        groupSize: 8,
        curveEvery: 0,
        auditEvery: 0,
        reanchorBudget: 0,
        epochs: 2,
      }),
      {
        policy: p,
        runRollout: (t, h, s) => runEpisode(t, h, s, { env: digitEnv, policy: p }),
        pool,
        trainTasks: tasks,
        probeTasks: tasks,
        initialProfiles: {},
        voters: [],
        rng: createRng(seed),
      },
    );

  it("raises the success rate above the untrained model's on every seed; flipped advantages lower it", async () => {
    const rows: { seed: number; before: number; trained: number; flipped: number; updates: number }[] = [];
    for (const seed of [1, 2, 3]) {
      const up = tokenPolicy(`trainer-up-${seed}`, seed);
      const down = tokenPolicy(`trainer-down-${seed}`, seed);
      const before = await rate(up, seed);
      await train(up, seed);
      await train(flipped(down), seed);
      rows.push({
        seed,
        before,
        trained: await rate(up, seed),
        flipped: await rate(down, seed),
        updates: up.version(),
      });
    }
    console.log(`trainArm through the worker (digit task, success on 48 fixed episodes): ${JSON.stringify(rows)}`);
    for (const r of rows) {
      // One update per step while some group still has reward variance (then there is nothing to learn from).
      expect(r.updates).toBeGreaterThanOrEqual(3);
      expect(r.updates).toBeLessThanOrEqual(6);
      expect(r.trained).toBeGreaterThan(r.before + 0.1);
      expect(r.flipped).toBeLessThan(r.before);
    }
  }, 600_000);
});

describe("the cloud path over protocol v2 (dispatch worker and coordinator's unit policies)", () => {
  it("detects v2, runs a requested rollout at the worker at the version asked for, and the unit policy trains on the stored rollout's ids", async () => {
    // Prepare: a unit policy made as the coordinator makes one (ids with '/' become worker ids)
    expect(await policyProtocol(worker.url, TOKEN)).toBe(2);
    expect(await policyProtocol("http://127.0.0.1:9")).toBe(1);
    const inst = await embeddedSetup(defaultEmbeddedSettings).instance(1);
    const shared = { ...sharedTokenPolicy, baseModel: "tiny", lora: LORA, maxTokens: 8 };
    const units = tokenUnitPolicies(client, (unit) => `exp_v2/${unit}/attempt-1`, shared);
    const { id, policy } = await units.create("grpo/1", 1);
    const pools = new MemoryPoolStore();
    await pools.put(inst.evolution.pool);
    const rollouts = new MemoryRolloutStore();
    const handler = createDispatchHandler({
      pools,
      rollouts,
      tasks: { get: async () => undefined },
      runners: rolloutRunners({ service: dispatchEndpoints(worker.url, TOKEN) }),
      log: () => undefined,
    });
    const task = inst.train[0]!;
    const record = (index: number, policyVersion: number) =>
      makeSqsRecord(
        `m${index}`,
        envelope("rollout.requested", `j:${index}`, {
          jobId: "j",
          index,
          poolId: inst.evolution.pool.id,
          harnessId: inst.evolution.pool.base.id,
          taskId: task.id,
          seed: index,
          source: { kind: "service", policyId: id, version: policyVersion },
          task,
        }),
      );
    // Act
    const first = await handler({ Records: [record(0, 0)] });
    const stored = await rollouts.get("j", 0);
    await policy.update({
      baseVersion: 0,
      samples: [{ rollout: stored!, advantage: 1 }],
      settings: {
        learningRate: 0.1,
        clipEpsilon: 0.2,
        klCoef: 0,
        epochs: 1,
        rescueContext: "as-generated",
        maskIntercepted: true,
      },
    });
    const second = await handler({ Records: [record(1, 0), record(2, 1)] });
    // Assess
    expect(id).toBe("exp_v2.grpo.1.attempt-1");
    expect(first.batchItemFailures).toEqual([]);
    expect(
      stored!.steps.filter((s) => !s.forced).every((s) => s.tokens?.version === 0 && s.tokens.completionIds.length > 0),
    ).toBe(true);
    expect(policy.version()).toBe(1);
    expect(second.batchItemFailures).toEqual([{ itemIdentifier: "m1" }]);
    expect((await rollouts.get("j", 2))!.steps.find((s) => s.tokens)!.tokens!.version).toBe(1);
    expect((await units.attach(id, 1))!.version()).toBe(1);
    await units.release!(id);
    expect(await units.attach(id, 1)).toBeUndefined();
  }, 120_000);
});

describe("a unit whose worker process is killed mid-run", () => {
  // Units trained through runExperiment with their policies at the worker (tokenUnitPolicies, as
  // the CLI's workerPolicySetup composes them: saved after every step, released at the end). The
  // worker is SIGKILLed after step 2; a fresh worker on the same state folder restores the policy
  // from its checkpoint and the unit continues at step 3, ending where an uninterrupted run ends:
  // the same policy version (one per update) and the same rollouts. (The digit task, so that
  // groups have reward variance and every step updates.)
  const config = ExperimentConfig.parse({
    seeds: [1],
    arms: ["grpo"],
    evalSamples: 3,
    evalTasks: 2,
    train: TrainConfig.parse({ steps: 4, batchSize: 4, groupSize: 4, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 }),
  });
  const shared = {
    baseModel: "tiny",
    lora: LORA,
    system: "Answer.",
    toolSchemas: () => [],
    maxTokens: 4,
    learningRate: 5e-2,
  };
  const instance = async () => ({
    train: tasks,
    dev: tasks,
    heldout: tasks,
    evolution: givenPool(pool),
  });

  async function run(url: string, resume?: ExperimentDeps["resume"], onStep?: (cp: UnitCheckpoint) => void) {
    const steps: UnitCheckpoint[] = [];
    const baselines: SeedBaseline[] = [];
    const at = new TokenPolicyClient(url, { token: TOKEN, clock: systemClock });
    const run = `kill${Math.random().toString(36).slice(2, 8)}`;
    const outcome = await runExperiment(config, {
      env: digitEnv,
      voters: statisticalVoters,
      instance,
      createPolicy: () => {
        throw new Error("unit policies come from `policies`");
      },
      policies: tokenUnitPolicies(at, (unit) => `${run}-${unit}`, shared, seedOfUnit),
      ...(resume ? { resume } : {}),
      onSeedBaseline: (b) => void baselines.push(b),
      onUnitStep: (cp) => {
        steps.push(cp);
        onStep?.(cp);
      },
    }).catch((err: unknown) => err as Error);
    if (outcome instanceof Error && !resume && !onStep) throw outcome;
    return { outcome, steps, baselines };
  }

  it("continues on a fresh worker from its checkpoint and ends with the same version, updates and rollouts as an uninterrupted run", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "hs-worker-state-"));
    const first = await startPolicyWorker({ model: "tiny", token: TOKEN, stateDir });
    const killed = await run(first.url, undefined, (cp) => {
      if (cp.state.step === 2) first.process.kill("SIGKILL");
    });
    expect(killed.outcome).toBeInstanceOf(Error);
    expect(killed.steps.map((s) => s.state.step)).toEqual([1, 2]);
    const second = await startPolicyWorker({ model: "tiny", token: TOKEN, stateDir });
    try {
      const resumed = await run(second.url, {
        baselines: killed.baselines,
        results: [],
        units: [killed.steps.at(-1)!],
      });
      expect(resumed.outcome).toMatchObject({ kind: "done" });
      expect(resumed.steps.map((s) => s.state.step)).toEqual([3, 4]); // continued, not started over
      const whole = await run(second.url);
      expect(whole.outcome).toMatchObject({ kind: "done" });
      const end = (r: typeof whole) => r.steps.at(-1)!.state;
      console.log(
        `killed after step 2, resumed on a fresh worker: ${JSON.stringify({ resumed: end(resumed).policyVersion, uninterrupted: end(whole).policyVersion, rollouts: end(whole).counts })}`,
      );
      expect(end(resumed).policyVersion).toBe(end(whole).policyVersion);
      expect(end(resumed).policyVersion).toBeGreaterThanOrEqual(3);
      expect(end(resumed).counts).toEqual(end(whole).counts);
      // Every unit's policy (and the seed's initial one) was released when it ended.
      const health = (await (await fetch(`${second.url}/healthz`)).json()) as { policies: number };
      expect(health.policies).toBe(0);
    } finally {
      await second.stop();
    }
  }, 600_000);
});

describe("the voter panel against the worker's OpenAI façade (real output of the tiny model)", () => {
  it("the model's vote is malformed or refused: it abstains, nothing crashes, and the statistical voters meet the quorum", async () => {
    // Prepare: a policy the façade serves, and a panel of it beside two statistical voters (quorum 2).
    await client.create("voter", { base_model: "tiny", lora: LORA });
    const siblings = ["contract", "recovery", "budget"].map((direction) =>
      parseHarnessSpec({
        id: `sib-${direction}`,
        budget: { maxTurns: 8 },
        provenance: { direction },
        postObservation: [{ on: "page:more", hint: "next_page" }],
      }),
    );
    const [first, second] = statisticalVoters;
    const panel = VoterPanel.parse({
      voters: [
        {
          kind: "llm",
          id: "tiny",
          baseURL: `${worker.url}/v1`,
          model: "voter",
          apiKeySecret: "WORKER_TOKEN",
          maxTokens: 24,
          timeoutMs: 60_000,
        },
        { kind: "statistical", id: first!.id },
        { kind: "statistical", id: second!.id },
      ],
      quorum: 2,
    });
    const routing = votersFromPanel(panel, {
      apiKey: (name) => (name === "WORKER_TOKEN" ? TOKEN : undefined),
      statistical: statisticalVoters,
    });
    const input = {
      decisionId: "d-tiny",
      task: { id: "app-1", family: "app", tags: ["app"] },
      failureTags: ["incomplete-results"],
      candidates: siblings,
      profiles: {},
      poolVersion: "v",
    };
    // Act
    const decision = await route(
      input,
      routerOptions({ k: 1, ...routing.options, voterTimeoutMs: routing.timeoutMs }),
      {
        voters: routing.voters,
        rng: createRng(1),
        clock: systemClock,
      },
    );
    // Assess
    expect(decision.failures.map((f) => f.voterId)).toEqual(["tiny"]);
    expect(["malformed", "error"]).toContain(decision.failures[0]!.kind);
    expect(decision.ballots.map((b) => b.voterId)).toEqual([first!.id, second!.id]);
    expect(decision.chosen).toHaveLength(1);
  }, 120_000);
});

/**
 * Where the gateway runs: in this process (memory), or two processes of the API Lambda over DynamoDB Local with one
 * restarted between turns.
 */
type GatewayPlace = {
  url: string;
  stores: Pick<ApiDeps, "pools" | "profiles" | "keys">;
  restart?: () => Promise<void>;
  close: () => Promise<void>;
};
const gatewayPlaces: [string, (harness: HarnessSpec) => Promise<GatewayPlace>][] = [
  [
    "in one process",
    async () => {
      const deps = memoryApiDeps({
        gateway: {
          upstream: new OpenAiUpstream(new OpenAI({ baseURL: `${worker.url}/v1`, apiKey: TOKEN, maxRetries: 0 })),
          episodes: new GatewayEpisodes(new MemoryGatewayEpisodeStore({ maxEpisodes: 10, maxEpisodesPerKey: 10 }), {
            idleMs: 60_000,
          }),
          poolId: "gw",
          observerFor: genericObserver,
          submitTool: "submit",
          defaultFamily: "app",
        },
      });
      const api = await startApi(deps);
      return { url: api.url, stores: deps, close: api.close };
    },
  ],
  [
    "in the API Lambda (two processes over DynamoDB Local, one restarted between turns)",
    async () => {
      const lambda = await startLambdaGateway(inject("dynamoEndpoint"), {
        upstream: `${worker.url}/v1`,
        apiKey: TOKEN,
        pool: "gw",
        env: "generic",
      });
      return { url: lambda.url, stores: lambda.stores, restart: () => lambda.restart(0), close: lambda.close };
    },
  ],
];

describe.each(gatewayPlaces)(
  "the Rank-1 gateway in front of the worker's OpenAI façade (the tiny model), %s",
  (_where, place) => {
    it("records the episode as one datum whose ids re-score at the worker to the recorded log-probabilities, the harness's insertions at mask 0", async () => {
      // Prepare: a policy the façade serves; a pool whose harness adds a system text and a note after every failed
      // call.
      await client.create("gw-tiny", { base_model: "tiny", lora: LORA }).catch(() => undefined); // the first place made it already
      const NOTE = "Call exactly one tool ZQXJV now.";
      const harness = parseHarnessSpec({
        id: "gw-notes",
        instruction: { systemAppend: "Harness: use the tools." },
        postObservation: [{ on: "error:*", hint: "lookup", text: NOTE, maxFires: 5 }],
        budget: { maxTurns: 6 },
        provenance: { direction: "base" },
      });
      const api = await place(harness);
      const twin = parseHarnessSpec({
        ...harness,
        id: "gw-notes-2",
        provenance: { direction: "recovery", parent: "gw-notes" },
      }); // a pool has a sibling; either one adds the note
      await seedPool(api.stores as ApiDeps, createPool("gw", harness, [twin]), {});
      const secret = await addKey(api.stores as ApiDeps, "agent", ["gateway"]);
      const agent = new OpenAI({
        baseURL: `${api.url}/v1/gateway`,
        apiKey: secret,
        maxRetries: 0,
        defaultHeaders: { "x-harness-s-episode": "ep-tiny" },
      });
      const tools = [
        {
          type: "function" as const,
          function: { name: "lookup", description: "Look up", parameters: { type: "object", properties: {} } },
        },
      ];
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
        { role: "system", content: "Answer with a tool call." },
        { role: "user", content: "Find it." },
      ];
      try {
        // Act: three turns of an agent that answers every reply (a call: its output is an error; none: it asks again).
        for (let t = 0; t < 3; t++) {
          if (t === 2) await api.restart?.();
          const reply = (
            await agent.chat.completions.create({
              model: "gw-tiny",
              messages,
              tools,
              temperature: 1,
              top_p: 1,
              max_tokens: 12,
              seed: t,
            })
          ).choices[0]!.message;
          const call = reply.tool_calls?.[0];
          messages.push({
            role: "assistant",
            content: reply.content,
            ...(call ? { tool_calls: [call] } : {}),
          } as OpenAI.Chat.ChatCompletionMessageParam);
          messages.push(
            call
              ? { role: "tool", tool_call_id: call.id, content: "Error: nothing" }
              : { role: "user", content: "Internal error: No tool calls found despite finish reason." },
          );
        }
        const trajectory = GatewayTrajectory.parse(
          await (
            await fetch(`${api.url}/v1/gateway/episodes/ep-tiny`, { headers: { authorization: `Bearer ${secret}` } })
          ).json(),
        );
        // Assess: one datum (the worker continued one episode), mask 1 on exactly the three completions.
        expect(trajectory.turns).toHaveLength(3);
        expect(trajectory.turns[1]!.harnessNotes).toEqual([NOTE]);
        expect(trajectory.datums).toHaveLength(1);
        const d = trajectory.datums[0]!;
        const completions = trajectory.turns.map((t) => t.tokens!.completion);
        const runs = d.loss_mask
          .join("")
          .split(/0+/)
          .filter(Boolean)
          .map((r) => r.length);
        expect(runs).toEqual(completions);
        // The ids re-score at the worker to the recorded behaviour log-probabilities.
        const [scored] = await client.score("gw-tiny", { sequences: [{ ids: d.ids }] });
        const gaps = d.loss_mask.flatMap((m, i) => (m === 1 ? [Math.abs(scored![i]! - d.behaviour_logprobs[i]!)] : []));
        expect(gaps).toHaveLength(completions.reduce((a, b) => a + b, 0));
        expect(Math.max(...gaps)).toBeLessThan(1e-4);
        // The harness's note is in the sequence (its word's ids), and only at mask 0.
        const plain = await client.render("gw-tiny", { messages: [{ role: "user", content: "a" }] });
        const marked = await client.render("gw-tiny", { messages: [{ role: "user", content: "a ZQXJV" }] });
        let prefix = 0;
        while (plain[prefix] === marked[prefix]) prefix++;
        let suffix = 0;
        while (suffix < plain.length - prefix && plain.at(-1 - suffix) === marked.at(-1 - suffix)) suffix++;
        const word = marked.slice(prefix, marked.length - suffix); // the ids of " ZQXJV" (a pre-token of its own)
        const at = d.ids.findIndex((_, i) => word.length > 0 && word.every((id, j) => d.ids[i + j] === id));
        expect(at).toBeGreaterThan(0);
        expect(d.loss_mask.slice(at, at + word.length).every((m) => m === 0)).toBe(true);
      } finally {
        await api.close();
      }
    }, 180_000);
  },
);
