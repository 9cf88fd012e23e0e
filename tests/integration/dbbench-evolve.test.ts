import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BUNDLED_DATA_DIR,
  MysqlEngine,
  isMutation,
  loadSplit,
  readSplits,
  rowPrompt,
  dbbenchEvolve,
  type DbBenchRow,
  type SqlEngine,
} from "@harness-s/dbbench";
import { startScriptedOpenAi, type ChatRequest, type ScriptedReply } from "../scripted-openai.ts";

let engine: MysqlEngine;
let dev: DbBenchRow[];
beforeAll(async () => {
  engine = await MysqlEngine.start();
  dev = await loadSplit(BUNDLED_DATA_DIR, "dev");
}, 60_000);
afterAll(async () => engine?.shutdown());

const call = (name: string, args: unknown): ScriptedReply => ({ call: { name, arguments: JSON.stringify(args) } });
/**
 * A policy that plays the gold only when its instruction says "Commit the values exactly as read"; otherwise a wrong
 * answer.
 */
function policy(req: ChatRequest): ScriptedReply {
  const user = String(req.messages.find((m) => m.role === "user")!.content);
  const row = dev.find((r) => user.includes(rowPrompt(r)))!;
  if (!user.includes("Commit the values exactly as read")) return call("commit_final_answer", { answers: ["no idea"] });
  const turns = req.messages.filter((m) => m.role === "assistant").length;
  if (isMutation(row) && turns < row.label.length) return call("execute_sql", { query: row.label[turns] });
  return call("commit_final_answer", { answers: isMutation(row) ? [] : row.label });
}

describe("evolve --env dbbench: an LLM proposer (scripted, loopback), dev rows only, a budget", () => {
  it("evolves a sibling with provenance from the proposer's patch, honours the call budget, and opens no row outside dev", async () => {
    // Prepare: the proposer's first answer is a contract edit citing two dev rows; the rest are garbage.
    const proposals: ScriptedReply[] = [
      {
        content: JSON.stringify({
          hypothesis: "answers drift from the database's text",
          evidence: ["dev-0", "dev-1"],
          patch: { instruction: { systemAppend: "Commit the values exactly as read." } },
        }),
      },
    ];
    const proposer = await startScriptedOpenAi(() => proposals.shift() ?? { content: "no idea" });
    const model = await startScriptedOpenAi(policy);
    const opened: string[] = [];
    const spy: SqlEngine = {
      name: engine.name,
      open: (row) => {
        opened.push(row.id);
        return engine.open(row);
      },
      shutdown: async () => undefined,
      emptyDatabaseCycle: () => engine.emptyDatabaseCycle(),
    };
    const out = join(await mkdtemp(join(tmpdir(), "hs-evolve-")), "pool.json");
    const lines: string[] = [];
    try {
      // Act
      const report = await dbbenchEvolve(
        {
          out,
          proposerUrl: proposer.url,
          proposerModel: "scripted-proposer",
          policyUrl: model.url,
          maxCalls: 3,
          rounds: 1,
          candidates: 1,
          trials: 1,
          devTasks: 6,
          screen: 3,
        },
        { engine: spy, log: (l) => lines.push(l) },
      );
      // Assess: the budget was printed first and honoured; the garbage was refused and counted.
      expect(lines[0]).toMatch(
        /^budget: 3 proposer calls \(scripted-proposer\), 3000 rollouts; H0's own measurement takes 6/,
      );
      expect(report.proposer).toMatchObject({ calls: 3, accepted: 1, refused: { "invalid-json": 2 } });
      expect(report.stopped).toBe("proposer budget spent");
      const pool = JSON.parse(await readFile(out, "utf8"));
      expect(pool.siblings).toHaveLength(1);
      expect(pool.siblings[0].provenance).toMatchObject({
        direction: "contract",
        parent: "dbbench-h0",
        hypothesis: "answers drift from the database's text",
        proposer: "llm:scripted-proposer",
      });
      expect(report.repairSets[pool.siblings[0].id]).toHaveLength(6);
      // Held-out (and train) rows were never opened: evolution sees dev rows only.
      const splits = await readSplits(BUNDLED_DATA_DIR);
      expect(opened.length).toBeGreaterThan(0);
      expect(opened.filter((id) => !id.startsWith("dev-"))).toEqual([]);
      expect(opened.filter((id) => splits.heldout.includes(id))).toEqual([]);
    } finally {
      await Promise.all([proposer.close(), model.close()]);
    }
  }, 120_000);
});
