import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ExperimentConfig, runExperimentToEnd } from "@harness-s/core/experiment";
import { QuorumError } from "@harness-s/core/voting";
import { createPool, createRng, systemClock, type HarnessSpec } from "@harness-s/core";
import { TrainConfig } from "@harness-s/core/training";
import { VoterPanel, route, routerOptions, statisticalVoters } from "@harness-s/core/voting";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { runExperimentLocalAws } from "../../packages/cli/src/runtime/local-aws.ts";
import { votersFromPanel } from "@harness-s/adapters/llm";
import { addKey, memoryApiDeps, seedPool, startApi } from "../api-factory.ts";
import { makeSpec } from "../factories.ts";
import { startScriptedOpenAi } from "../scripted-openai.ts";

// Three OpenAI-compatible voters on loopback: one answers well (inside a code fence, as a server
// that ignores response_format would), one answers garbage, one never answers in time.
type Server = Awaited<ReturnType<typeof startScriptedOpenAi>>;
let good: Server;
let garbage: Server;
let slow: Server;

const candidates: HarnessSpec[] = [
  makeSpec({
    id: "sib-pages",
    description: "follows pagination",
    instruction: {
      systemAppend: "Always read every page before submitting.",
      toolNotes: { next_page: "call until page:last" },
    },
    postObservation: [{ on: "page:more", hint: "next_page", text: "More pages remain." }],
    provenance: { direction: "contract", hypothesis: "failures stop at page 1" },
  }),
  makeSpec({
    id: "sib-auth",
    postObservation: [{ on: "error:401", hint: "login" }],
    provenance: { direction: "recovery" },
  }),
  makeSpec({
    id: "sib-budget",
    budget: { maxTurns: 8, warnAt: 2, forceSubmitAt: 1 },
    provenance: { direction: "budget" },
  }),
];
const input = {
  decisionId: "d-panel",
  task: { id: "app-7", family: "app", tags: ["app", "bulk"] },
  failureTags: ["incomplete-results"],
  failedEvents: ["page:more", "submit:rejected"],
  candidates,
  profiles: {},
  poolVersion: "v",
};

beforeAll(async () => {
  // Ranks the candidates it is shown by id, descending (for the three above: pages, budget, auth).
  good = await startScriptedOpenAi((req) => {
    const ranking = (JSON.parse(req.messages[1]!.content!) as { candidates: { id: string }[] }).candidates
      .map((c) => c.id)
      .sort()
      .reverse();
    return { content: `\`\`\`json\n${JSON.stringify({ ranking, rationale: "pages remained" })}\n\`\`\`` };
  });
  garbage = await startScriptedOpenAi(() => ({ content: "sib-pages, I suppose" }));
  slow = await startScriptedOpenAi(async () => {
    await new Promise((r) => setTimeout(r, 3_000));
    return { content: '{"ranking": ["sib-auth"]}' };
  });
});
afterAll(async () => Promise.all([good, garbage, slow].map((s) => s?.close())));

const panelOf = (over: Partial<VoterPanel> = {}) =>
  VoterPanel.parse({
    voters: [
      { kind: "llm", id: "good", baseURL: good.url, model: "m-good", price: { input: 1e-6, output: 2e-6 } },
      { kind: "llm", id: "garbage", baseURL: garbage.url, model: "m-garbage" },
      { kind: "llm", id: "slow", baseURL: slow.url, model: "m-slow", timeoutMs: 1_000 },
    ],
    ...over,
  });
/**
 * An experiment's setup deciding with the good and the garbage voter (deterministic: the slow one would race the
 * clock), quorum 1.
 */
const panelExperiment = () => {
  const panel = VoterPanel.parse({
    voters: [
      { kind: "llm", id: "good", baseURL: good.url, model: "m-good" },
      { kind: "llm", id: "garbage", baseURL: garbage.url, model: "m-garbage" },
    ],
    quorum: 1,
  });
  const routing = votersFromPanel(panel, { apiKey: () => "unused", statistical: statisticalVoters });
  const setup = {
    ...embeddedSetup(defaultEmbeddedSettings),
    voters: routing.voters,
    panel: { ...routing, clock: systemClock },
  };
  const train = TrainConfig.parse({
    steps: 2,
    batchSize: 4,
    curveEvery: 0,
    auditEvery: 0,
    reanchorEvery: 1,
    reanchorBudget: 4,
  });
  return { routing, setup, train };
};

const routeWith = (panel: VoterPanel) => {
  const routing = votersFromPanel(panel, { apiKey: () => "unused", statistical: statisticalVoters });
  return route(input, routerOptions({ k: 1, ...routing.options, voterTimeoutMs: routing.timeoutMs }), {
    voters: routing.voters,
    fallback: routing.fallback,
    rng: createRng(1),
    clock: systemClock,
  });
};

describe("a panel of LLM voters with a quorum (scripted OpenAI-compatible servers on loopback)", () => {
  it("decides by quorum: the good voter's ballot counts with its tokens and cost, garbage is retried once then abstains, the slow one times out", async () => {
    // Act
    const decision = await routeWith(panelOf({ quorum: 1 }));
    // Assess
    expect(decision.chosen).toEqual(["sib-pages"]);
    expect(decision.ballots).toHaveLength(1);
    expect(decision.ballots[0]).toMatchObject({
      voterId: "good",
      rationale: "pages remained",
      usage: { promptTokens: 10, completionTokens: 5 },
      costUsd: expect.closeTo(20e-6, 12),
    });
    const failures = Object.fromEntries(decision.failures.map((f) => [f.voterId, f]));
    expect(failures.garbage).toMatchObject({
      kind: "malformed",
      reason: expect.stringMatching(/answer is not JSON.*after one retry/),
    });
    expect(failures.slow).toMatchObject({ kind: "timeout" });
    expect(garbage.requests).toHaveLength(2);
    expect(garbage.requests[1]!.messages.at(-1)!.content).toMatch(/could not be used/);
  });

  it("shows each candidate in full: instruction text, tool notes, triggers, hypothesis and profile", async () => {
    await routeWith(panelOf({ quorum: 1 }));
    const prompt = JSON.parse(good.requests.at(-1)!.messages[1]!.content!);
    const pages = prompt.candidates.find((c: { id: string }) => c.id === "sib-pages");
    expect(pages).toMatchObject({
      direction: "contract",
      hypothesis: "failures stop at page 1",
      instruction: "Always read every page before submitting.",
      toolNotes: { next_page: "call until page:last" },
      triggers: ["on page:more: More pages remain."],
      profile: { policyVersion: null },
    });
    expect(good.requests.at(-1)).toMatchObject({ model: "m-good" });
  });

  it("below the quorum fails with QuorumError, or lets the statistical voters decide when the panel says so", async () => {
    await expect(routeWith(panelOf({ quorum: 2 }))).rejects.toBeInstanceOf(QuorumError);
    const fallback = await routeWith(panelOf({ quorum: 2, onQuorumMiss: "statistical" }));
    expect(fallback.fellBack).toBe(true);
    expect(fallback.ballots.map((b) => b.voterId)).toEqual(statisticalVoters.map((v) => v.id));
    expect(fallback.failures.map((f) => f.voterId).sort()).toEqual(["garbage", "slow"]);
  });

  it("refuses a panel with repeated ids, a quorum above its size, or a missing key secret", () => {
    const twice = VoterPanel.safeParse({
      voters: [
        { kind: "statistical", id: "a" },
        { kind: "statistical", id: "a" },
      ],
    });
    expect(twice.error!.issues[0]!.message).toMatch(/a listed twice/);
    expect(
      VoterPanel.safeParse({ voters: [{ kind: "statistical", id: "a" }], quorum: 2 }).error!.issues[0]!.message,
    ).toMatch(/quorum 2 is more than the 1 voters/);
    const keyed = VoterPanel.parse({
      voters: [{ kind: "llm", id: "x", baseURL: "http://127.0.0.1:9/v1", model: "m", apiKeySecret: "NO_SUCH_KEY" }],
    });
    expect(() => votersFromPanel(keyed, { apiKey: () => undefined, statistical: statisticalVoters })).toThrow(
      /the secret NO_SUCH_KEY is not set/,
    );
  });

  it("decides /v1/route over HTTP by the panel, stores the ballots with the decision, and answers 503 QUORUM_NOT_MET below the quorum", async () => {
    // Prepare: the API with the panel's voters, a pool of the three candidates.
    const serveWith = async (panel: VoterPanel) => {
      const routing = votersFromPanel(panel, { apiKey: () => "unused", statistical: statisticalVoters });
      const deps = memoryApiDeps({ voters: routing.voters, panel: routing });
      await seedPool(deps, createPool("p", makeSpec({ id: "h0", provenance: { direction: "base" } }), candidates), {});
      const key = await addKey(deps, "k", ["route"]);
      const api = await startApi(deps);
      const call = (path: string, body?: unknown) =>
        fetch(`${api.url}${path}`, {
          method: body ? "POST" : "GET",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        });
      return { api, call, deps };
    };
    const body = {
      poolId: "p",
      task: { id: "app-7", family: "app", tags: ["app"] },
      failureTags: ["incomplete-results"],
      k: 1,
    };
    // Act
    const quorate = await serveWith(panelOf({ quorum: 1 }));
    const res = await quorate.call("/v1/route", body);
    const decision = await res.json();
    const stored = await (await quorate.call(`/v1/decisions/${decision.id}`)).json();
    const short = await serveWith(panelOf({ quorum: 2 }));
    const refused = await short.call("/v1/route", body);
    await Promise.all([quorate.api.close(), short.api.close()]);
    // Assess
    expect(res.status).toBe(200);
    expect(decision.chosen).toEqual(["sib-pages"]);
    expect(stored.ballots).toEqual(decision.ballots);
    expect(stored.failures.map((f: { kind: string }) => f.kind).sort()).toEqual(["malformed", "timeout"]);
    const garbageFailure = stored.failures.find((f: { voterId: string }) => f.voterId === "garbage");
    expect(garbageFailure.usage).toEqual({ promptTokens: 20, completionTokens: 10 }); // the answer and its retry
    expect(await quorate.deps.meter.get("k")).toMatchObject({ requests: 2, ballots: 1, llmTokens: 15 + 30 });
    expect(refused.status).toBe(503);
    expect((await refused.json()).error.code).toBe("QUORUM_NOT_MET");
  });

  it("an experiment's router arms decide with the panel in process: the good voter's ballots count, garbage abstains, the run completes", async () => {
    // Prepare: the good and the garbage voter, quorum 1.
    const { setup, train } = panelExperiment();
    const config = ExperimentConfig.parse({
      seeds: [3],
      arms: ["grpo", "harness-s"],
      train,
      evalSamples: 3,
      evalTasks: 4,
    });
    const [goodBefore, garbageBefore] = [good.requests.length, garbage.requests.length];
    // Act
    const summary = await runExperimentToEnd(config, setup);
    // Assess: every decision asked both LLM voters; garbage was asked twice per decision (one retry).
    const rescues = summary.arms.find((a) => a.name === "harness-s")!.perSeed[0]!.rescue.triggered;
    const goodAsked = good.requests.length - goodBefore;
    expect(rescues).toBeGreaterThan(0);
    expect(goodAsked).toBeGreaterThanOrEqual(rescues);
    expect(garbage.requests.length - garbageBefore).toBe(2 * goodAsked);
  }, 120_000);

  it("the same experiment through the local stack's vote queue equals the in-process run: the garbage voter's abstention is stored by the vote worker, not waited out", async () => {
    // Prepare
    const { routing, setup, train } = panelExperiment();
    const config = ExperimentConfig.parse({
      seeds: [3],
      arms: ["grpo", "harness-s"],
      train,
      evalSamples: 3,
      evalTasks: 4,
    });
    // Act
    const asked = () => [good.requests.length, garbage.requests.length];
    const before = asked();
    const inProcess = await runExperimentToEnd(config, setup);
    const between = asked();
    const viaQueues = await runExperimentLocalAws(config, setup, () => undefined, undefined, {
      dynamoEndpoint: inject("dynamoEndpoint"),
      panel: routing,
    });
    const after = asked();
    // Assess: the same summary; through the vote worker each decision asked the garbage voter twice
    // (its answer and the retry), as in process: its abstention was an answer, not a redelivery.
    // (That the waiting decision goes on at once is tests/unit/queued-abstention.test.ts's.)
    expect(viaQueues).toEqual(inProcess);
    const [goodIn, garbageIn] = [between[0]! - before[0]!, between[1]! - before[1]!];
    const [goodQueued, garbageQueued] = [after[0]! - between[0]!, after[1]! - between[1]!];
    expect(goodQueued).toBe(goodIn);
    expect(garbageIn).toBe(2 * goodIn);
    expect(garbageQueued).toBe(2 * goodQueued);
  }, 240_000);
});
