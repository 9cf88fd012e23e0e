import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvolutionConfig, evolvePool, type FailureEvidence, type ProposalInput } from "@harness-s/core/evolution";
import { createRng, type Rollout, type Task } from "@harness-s/core";
import { OpenAiProposer } from "@harness-s/adapters/llm";
import {
  BUNDLED_DATA_DIR,
  dbbenchH0,
  dbbenchLeakIndex,
  isMutation,
  loadSplit,
  type DbBenchRow,
} from "@harness-s/dbbench";
import { makeRollout, makeTask } from "../factories.ts";
import { startScriptedOpenAi, type ScriptedReply } from "../scripted-openai.ts";

let dev: DbBenchRow[];
let answers: ScriptedReply[] = [];
let server: Awaited<ReturnType<typeof startScriptedOpenAi>>;
beforeAll(async () => {
  dev = await loadSplit(BUNDLED_DATA_DIR, "dev");
  server = await startScriptedOpenAi(() => answers.shift() ?? { content: "{}" });
});
afterAll(() => server?.close());

const json = (v: unknown): ScriptedReply => ({ content: JSON.stringify(v) });
const evidence = (ids: string[]): FailureEvidence[] =>
  ids.map((taskId) => ({
    taskId,
    family: "dbbench",
    failureTags: ["sql-error:syntax"],
    excerpt: ['execute_sql {"query":"SELEC …"} → sql:error:syntax: 1064 (42000) …'],
  }));
const proposerWith = (maxCalls: number) =>
  new OpenAiProposer(new OpenAI({ baseURL: server.url, apiKey: "none", maxRetries: 0 }), {
    model: "scripted",
    maxCalls,
    leaks: dbbenchLeakIndex(dev),
    tools: [{ name: "execute_sql", description: "run SQL" }],
    events: ["sql:error:*", "sql:rows", "sql:empty", "sql:ok"],
  });
const input = (over: Partial<ProposalInput> = {}): ProposalInput => ({
  parent: dbbenchH0,
  direction: "recovery",
  signals: [],
  evidence: evidence(["dev-1", "dev-2", "dev-3"]),
  count: 1,
  rng: createRng(1),
  round: 0,
  ...over,
});
const goodPatch = {
  hypothesis: "agents repeat malformed SQL",
  evidence: ["dev-1", "dev-2"],
  patch: { postObservation: [{ on: "sql:error:syntax", hint: "execute_sql", text: "Check the quoting of names." }] },
};

describe("the LLM proposer (a scripted OpenAI-compatible server on loopback)", () => {
  it("turns a valid patch into a sibling with its provenance", async () => {
    answers = [json(goodPatch)];
    const proposer = proposerWith(5);
    const [spec] = await proposer.propose(input());
    expect(spec!.postObservation.at(-1)).toMatchObject({ on: "sql:error:syntax", text: "Check the quoting of names." });
    expect(spec!.provenance).toEqual({
      direction: "recovery",
      parent: "dbbench-h0",
      hypothesis: "agents repeat malformed SQL",
      motivatingTasks: ["dev-1", "dev-2"],
      proposer: "llm:scripted",
    });
    expect(proposer.report).toMatchObject({ calls: 1, accepted: 1, refused: {} });
  });

  it("refuses invalid JSON, a patch the schema refuses, a leaky hint, an edit outside its direction and thin evidence, each counted with its reason", async () => {
    const select = dev.find((r) => !isMutation(r) && String(r.label[0]).length >= 4)!;
    answers = [
      { content: "I would add a note about quoting." },
      json({
        ...goodPatch,
        patch: { postObservation: [{ on: "sql:error:syntax", hint: "execute_sql", maxFires: 0 }] },
      }),
      json({
        ...goodPatch,
        patch: { instruction: { systemAppend: `When unsure, the answer is ${select.label[0]}.` } },
      }),
      json({ ...goodPatch, patch: { budget: { maxTurns: 30 } } }),
      json({ ...goodPatch, evidence: ["dev-1"] }),
      json({ ...goodPatch, evidence: ["dev-1", "dev-99"] }),
    ];
    const proposer = proposerWith(10);
    const specs = await proposer.propose(input({ count: 6 }));
    expect(specs).toEqual([]);
    expect(proposer.report.refused).toEqual({
      "invalid-json": 1,
      schema: 1,
      leak: 1,
      "outside-direction": 1,
      evidence: 2,
    });
    expect(proposer.report.lastRefusals.find((r) => r.reason === "leak")!.detail).toMatch(
      new RegExp(`of task ${select.id}`),
    );
    expect(proposer.report.lastRefusals.find((r) => r.reason === "outside-direction")!.detail).toMatch(
      /recovery edit may change postObservation, instruction, not budget/,
    );
  });

  it("stops evolution cleanly when its call budget is spent, and evolution stops when its rollout budget would be passed", async () => {
    // Prepare: four dev tasks; a rollout succeeds under any harness with a note after SQL errors.
    const tasks: Task[] = [1, 2, 3, 4].map((i) => makeTask({ id: `dev-${i}`, family: "dbbench" }));
    const runRollout = async (task: Task, spec: typeof dbbenchH0): Promise<Rollout> =>
      makeRollout({
        taskId: task.id,
        family: "dbbench",
        harnessId: spec.id,
        success: spec.postObservation.length > 0,
        failureTags: spec.postObservation.length ? [] : ["wrong-answer"],
      });
    const config = EvolutionConfig.parse({
      directions: ["recovery", "contract"],
      rounds: 3,
      candidatesPerRound: 2,
      trials: 1,
      minRepairs: 2,
    });
    const deps = (proposer: OpenAiProposer) => ({
      base: dbbenchH0,
      devTasks: tasks,
      runRollout,
      proposer,
      vocabulary: () => ({ tools: [], facts: [], roles: {} }),
      rng: createRng(3),
    });
    // Act: a budget of 3 calls; the first answer repairs every task.
    answers = [json({ ...goodPatch, evidence: ["dev-1", "dev-2"] })];
    const proposer = proposerWith(3);
    const result = await evolvePool(config, deps(proposer));
    // Assess
    expect(result.stopped).toBe("proposer budget spent");
    expect(proposer.report.calls).toBe(3);
    expect(result.pool.siblings).toHaveLength(1);
    expect(result.pool.siblings[0]!.provenance).toMatchObject({
      direction: "recovery",
      motivatingTasks: ["dev-1", "dev-2", "dev-3", "dev-4"],
      proposer: "llm:scripted",
    });
    // A rollout budget of H0's measurement and one candidate: the second candidate is never measured.
    answers = [json(goodPatch), json(goodPatch)];
    const capped = await evolvePool({ ...config, maxRollouts: 8 }, deps(proposerWith(10)));
    expect(capped.stopped).toBe("rollout budget spent");
    expect(capped.rolloutsSpent).toBe(8);
    await expect(evolvePool({ ...config, maxRollouts: 3 }, deps(proposerWith(1)))).rejects.toThrow(
      /cannot pay for H0's own measurement/,
    );
  });

  it("screens a candidate on a minibatch of the parent's failures first (GEPA-style): one that repairs none there costs the minibatch only", async () => {
    const tasks: Task[] = [1, 2, 3, 4].map((i) => makeTask({ id: `dev-${i}`, family: "dbbench" }));
    const runRollout = async (task: Task, spec: typeof dbbenchH0): Promise<Rollout> =>
      makeRollout({ taskId: task.id, family: "dbbench", harnessId: spec.id, success: spec.postObservation.length > 0 });
    const config = EvolutionConfig.parse({
      directions: ["recovery"],
      rounds: 1,
      candidatesPerRound: 2,
      trials: 1,
      minRepairs: 2,
      screenTasks: 2,
    });
    answers = [
      json({ ...goodPatch, patch: { instruction: { systemAppend: "Quote names with backticks." } } }),
      json(goodPatch),
    ];
    const result = await evolvePool(config, {
      base: dbbenchH0,
      devTasks: tasks,
      runRollout,
      proposer: proposerWith(2),
      vocabulary: () => ({ tools: [], facts: [], roles: {} }),
      rng: createRng(3),
    });
    // H0 4, the useless edit 2 (screened out), the repairing one 2 + 2.
    expect(result.rolloutsSpent).toBe(4 + 2 + 4);
    expect(result.pool.siblings).toHaveLength(1);
  });
});
