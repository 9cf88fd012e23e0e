import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { BUNDLED_DATA_DIR, isMutation, loadSplit, rowPrompt } from "@harness-s/dbbench";
import { startScriptedOpenAi, type ChatRequest } from "../scripted-openai.ts";

const run = promisify(execFile);
const cli = ["packages/cli/bin/harness-s.js", "dbbench"];

describe("harness-s dbbench", () => {
  it("verify --json prints the gold replay figures (MariaDB, dev)", async () => {
    const { stdout } = await run("node", [...cli, "verify", "--engine", "mysql", "--split", "dev", "--json"], {
      timeout: 60_000,
    });
    expect(JSON.parse(stdout.trim().split("\n").pop()!)).toEqual({
      engine: "mysql",
      split: "dev",
      mutations: { matched: 40, total: 40 },
      selects: { matched: 20, total: 20 },
      unmatched: [],
    });
  }, 90_000);

  it("eval against an OpenAI-compatible server writes summary.json and report.md", async () => {
    const dev = await loadSplit(BUNDLED_DATA_DIR, "dev");
    const server = await startScriptedOpenAi((req: ChatRequest) => {
      const user = String(req.messages.find((m) => m.role === "user")!.content);
      const row = dev.find((r) => user.includes(rowPrompt(r)))!;
      const turn = req.messages.filter((m) => m.role === "assistant").length;
      if (isMutation(row) && turn === 0)
        return { call: { name: "execute_sql", arguments: JSON.stringify({ query: row.label[0] }) } };
      return {
        call: { name: "commit_final_answer", arguments: JSON.stringify({ answers: isMutation(row) ? [] : row.label }) },
      };
    });
    try {
      const out = await mkdtemp(join(tmpdir(), "hs-db-"));
      const { stdout } = await run(
        "node",
        [
          ...cli,
          "eval",
          "--base-url",
          server.url,
          "--model",
          "scripted",
          "--split",
          "dev",
          "--limit",
          "10",
          "--concurrency",
          "4",
          "--harness",
          "dbbench-schema-preview",
          "--out",
          out,
        ],
        { timeout: 60_000 },
      );
      expect(stdout).toContain("overall_cat_accuracy 100.0%");
      const summary = JSON.parse(await readFile(join(out, "summary.json"), "utf8"));
      expect(summary).toMatchObject({
        harness: "dbbench-schema-preview",
        rows: 10,
        accuracy: 1,
        erroredRows: 0,
        tokens: expect.any(Number),
      });
      expect(await readFile(join(out, "report.md"), "utf8")).toContain("overall_cat_accuracy");
      const bad = await run("node", [
        ...cli,
        "eval",
        "--base-url",
        server.url,
        "--model",
        "m",
        "--harness",
        "nope",
        "--out",
        out,
      ]).catch((e: { code: number; stderr: string }) => e);
      expect((bad as { code: number }).code).toBe(2);
      expect((bad as { stderr: string }).stderr).toMatch(
        /--harness <id>' argument 'nope' is invalid\. Allowed choices are dbbench-h0, /,
      );
    } finally {
      await server.close();
    }
  }, 90_000);
});
