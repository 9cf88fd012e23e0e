import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { OpenAiToolPolicy } from "@harness-s/adapters/llm";
import {
  BUNDLED_DATA_DIR,
  DBBENCH_SYSTEM,
  MysqlEngine,
  dbbenchH0,
  dbbenchSiblings,
  dbbenchTools,
  evalAgent,
  isMutation,
  loadSplit,
  parseArgumentsPy,
  rowPrompt,
  type DbBenchRow,
} from "@harness-s/dbbench";
import { startScriptedOpenAi, type ChatRequest, type ScriptedReply } from "../scripted-openai.ts";

let engine: MysqlEngine;
let dev: DbBenchRow[];

beforeAll(async () => {
  engine = await MysqlEngine.start({ prefix: "hsagent_" }); // its own prefix: leftovers are counted by prefix, and other files use the server at once
  dev = await loadSplit(BUNDLED_DATA_DIR, "dev");
}, 60_000);
afterAll(async () => {
  await engine?.shutdown();
});

const rowOf = (req: ChatRequest) => {
  const user = String(req.messages.find((m) => m.role === "user")!.content);
  const found = dev.filter((r) => user.includes(rowPrompt(r)));
  if (found.length !== 1) throw new Error(`ambiguous or unknown row for ${user.slice(0, 80)}`);
  return found[0]!;
};
const calls = (req: ChatRequest) => req.messages.filter((m) => m.role === "assistant").length;
const call = (name: string, args: unknown): ScriptedReply => ({ call: { name, arguments: JSON.stringify(args) } });

/** The gold, played as tool calls: the label SQL (mutations), then commit. */
const gold = (req: ChatRequest, offset = 0): ScriptedReply => {
  const row = rowOf(req);
  const turn = calls(req) - offset;
  if (isMutation(row) && turn < row.label.length) return call("execute_sql", { query: row.label[turn] });
  return call("commit_final_answer", { answers: isMutation(row) ? [] : row.label });
};

const policyFor = (url: string) =>
  new OpenAiToolPolicy(new OpenAI({ baseURL: url, apiKey: "test", maxRetries: 0, timeout: 5000 }), {
    model: "scripted",
    system: DBBENCH_SYSTEM,
    tools: dbbenchTools,
    parseArguments: parseArgumentsPy,
  });

describe("an OpenAI-compatible agent on DBBench (scripted local server, MariaDB)", () => {
  it("playing the gold reaches 100% on dev and records log-probabilities", async () => {
    const server = await startScriptedOpenAi((req) => gold(req));
    try {
      const s = await evalAgent(dev, engine, dbbenchH0, () => policyFor(server.url), { concurrency: 8 });
      expect(s.accuracy).toBe(1);
      expect(s.overallCatAccuracy).toBe(1);
      expect(s.failedRounds).toBe(0);
      expect(s.results.every((r) => r.logProbRecorded)).toBe(true);
      expect(server.requests[0]!.tools!.map((t) => t.function.name)).toEqual(["execute_sql", "commit_final_answer"]);
      expect(server.requests[0]!.messages[0]).toMatchObject({ role: "system", content: DBBENCH_SYSTEM });
    } finally {
      await server.close();
    }
  }, 60_000);

  it("broken tool calls are counted as failed rounds, never a crash; a model that recovers still scores", async () => {
    const broken: ScriptedReply[] = [
      { call: { name: "execute_sql", arguments: "{not json" } },
      { call: { name: "drop_everything", arguments: "{}" } },
      { content: "I think the answer is 7." },
    ];
    const rows = dev.slice(0, 12);
    // Always broken: every row fails at the round limit.
    const always = await startScriptedOpenAi((req) => broken[calls(req) % broken.length]!);
    // Broken for three rounds, then the gold.
    const recovering = await startScriptedOpenAi((req) => (calls(req) < 3 ? broken[calls(req)]! : gold(req, 3)));
    // The server errors on every request.
    const down = await startScriptedOpenAi(() => ({ status: 500 }));
    try {
      const a = await evalAgent(rows, engine, dbbenchH0, () => policyFor(always.url), { concurrency: 4 });
      expect(a.accuracy).toBe(0);
      expect(
        a.results.every((r) => r.rounds === 15 && r.failedRounds === 15 && r.failureTags.includes("rounds-exhausted")),
      ).toBe(true);
      const toolMessages = always.requests
        .at(-1)!
        .messages.filter((m) => m.role !== "system")
        .map((m) => m.content ?? "");
      expect(toolMessages).toContain("Error: Failed to parse tool call. Tool call format is incorrect.");
      expect(toolMessages).toContain("Invalid function call. Please call a tool instead.");
      expect(toolMessages).toContain("Internal error: No tool calls found despite finish reason.");

      const r = await evalAgent(rows, engine, dbbenchH0, () => policyFor(recovering.url), { concurrency: 4 });
      expect(r.accuracy).toBe(1);
      expect(r.failedRounds).toBe(3 * rows.length);

      const d = await evalAgent(rows.slice(0, 3), engine, dbbenchH0, () => policyFor(down.url));
      expect(d.erroredRows).toBe(3);
      expect(d.accuracy).toBe(0);
      expect(await engine.leftovers()).toEqual({ databases: 0, users: 0 });
    } finally {
      await Promise.all([always.close(), recovering.close(), down.close()]);
    }
  }, 120_000);
});

describe("each DBBench sibling changes what the agent sees, as its spec says", () => {
  const byId = (id: string) => dbbenchSiblings.find((s) => s.id === id)!;
  const select = () => dev.find((r) => !isMutation(r))!;
  const update = () => dev.find((r) => r.type[0] === "UPDATE")!;

  /** Runs one row under `harness` with a scripted model; returns what the server was sent. */
  async function seen(row: DbBenchRow, harnessId: string, script: (req: ChatRequest) => ScriptedReply) {
    const server = await startScriptedOpenAi(script);
    try {
      const harness = harnessId === dbbenchH0.id ? dbbenchH0 : byId(harnessId);
      const s = await evalAgent([row], engine, harness, () => policyFor(server.url));
      return { requests: server.requests, success: s.results[0]!.success, rounds: s.results[0]!.rounds };
    } finally {
      await server.close();
    }
  }
  const firstUser = (reqs: ChatRequest[]) => String(reqs[0]!.messages.find((m) => m.role === "user")!.content);
  const lastText = (reqs: ChatRequest[]) => String(reqs.at(-1)!.messages.at(-1)!.content);

  it("schema preview: the table's columns and first rows are in the first observation (and not under H0)", async () => {
    const row = select();
    const h0 = await seen(row, dbbenchH0.id, gold);
    const sib = await seen(row, "dbbench-schema-preview", gold);
    expect(firstUser(h0.requests)).not.toContain("First rows:");
    expect(firstUser(sib.requests)).toContain(`Table \`${row.table[0]!.table_name}\``);
    expect(firstUser(sib.requests)).toContain("First rows: [(");
  }, 30_000);

  it("explained errors: a syntax error is followed by an explanation (H0 shows the bare error)", async () => {
    const script = (req: ChatRequest) =>
      calls(req) === 0 ? call("execute_sql", { query: "SELEC broken" }) : gold(req, 1);
    const h0 = await seen(select(), dbbenchH0.id, script);
    const sib = await seen(select(), "dbbench-explained-errors", script);
    expect(h0.requests[1]!.messages.at(-1)!.content).toMatch(/^1064 \(42000\): You have an error in your SQL syntax/);
    expect(String(sib.requests[1]!.messages.at(-1)!.content)).toContain("[harness] That was a MySQL syntax error");
    expect(String(h0.requests[1]!.messages.at(-1)!.content)).not.toContain("[harness]");
  }, 30_000);

  it("answer gate: an answer that is SQL is refused once with a hint, then a proper answer is accepted", async () => {
    const row = select();
    const script = (req: ChatRequest) =>
      calls(req) === 0 ? call("commit_final_answer", { answers: ["SELECT x FROM t"] }) : gold(req, 1);
    const h0 = await seen(row, dbbenchH0.id, script);
    const sib = await seen(row, "dbbench-answer-gate", script);
    expect(h0.requests).toHaveLength(1);
    expect(h0.success).toBe(false);
    expect(sib.requests).toHaveLength(2);
    expect(lastText(sib.requests)).toContain("The answer was not accepted (answer:well-formed)");
    expect(lastText(sib.requests)).toContain("[harness] Commit only the answer values as a list");
    expect(sib.success).toBe(true);
  }, 30_000);

  it("normalisation hints: the comparison rules are part of the instruction", async () => {
    const sib = await seen(select(), "dbbench-normalisation-hints", gold);
    const h0 = await seen(select(), dbbenchH0.id, gold);
    expect(firstUser(sib.requests)).toContain("How answers are compared");
    expect(firstUser(h0.requests)).not.toContain("How answers are compared");
  }, 30_000);

  it("budget monitor: from 3 rounds left, every observation warns; H0 never does", async () => {
    const script = () => call("execute_sql", { query: "SELECT 1" });
    const sib = await seen(select(), "dbbench-budget-monitor", script);
    const h0 = await seen(select(), dbbenchH0.id, script);
    const warned = sib.requests.map((r) =>
      String(r.messages.at(-1)!.content).includes("rounds left: commit your final answer"),
    );
    expect(warned).toEqual([...Array(12).fill(false), true, true, true]);
    expect(h0.requests.some((r) => JSON.stringify(r.messages).includes("rounds left"))).toBe(false);
  }, 30_000);

  it("verify mutation: a successful change is followed by a nudge to check it", async () => {
    const sib = await seen(update(), "dbbench-verify-mutation", gold);
    expect(String(sib.requests[1]!.messages.at(-1)!.content)).toContain("[harness] The statement changed the table");
    expect(sib.success).toBe(true);
  }, 30_000);
});
