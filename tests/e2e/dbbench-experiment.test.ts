import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it, vi } from "vitest";
import { createPool, parseHarnessSpec, type HarnessSpec } from "@harness-s/core";
import { dbbenchH0, dbbenchSiblings } from "@harness-s/dbbench";
import { Checkpoint } from "../../packages/cli/src/checkpoint.ts";
import { sharedPolicyWorker } from "../run-policy-worker.ts";

// `experiment --env dbbench --policy worker` with the tiny model (random weights: it solves no
// row, so this checks that every part runs, not that anything is learned):
// one worker (the integration run's shared one, tests/shared-policy-worker.ts), the fixed splits, a fresh database
// per rollout, two arms for one step.
const run = promisify(execFile);
const cli = ["packages/cli/bin/harness-s.js"];
const args = (engine: string, pool: string, worker: string) => [
  "experiment",
  ...["--pool", pool, "--policy-url", worker, "--policy-token", inject("policyWorker").token],
  ...[
    "--env",
    "dbbench",
    "--engine",
    engine,
    "--policy",
    "worker",
    "--policy-model",
    "tiny",
    "--policy-max-tokens",
    "6",
  ],
  ...[
    "--seeds",
    "1",
    "--arms",
    "grpo,harness-s",
    "--steps",
    "1",
    "--train",
    '{"batchSize":2,"groupSize":2}',
    "--eval-tasks",
    "1",
    "--eval-samples",
    "3",
    "--profile-budget",
    "2",
  ],
];
const summaryOf = async (dir: string) => JSON.parse(await readFile(join(dir, "summary.json"), "utf8"));
const checkpointOf = async (dir: string) =>
  Checkpoint.parse(JSON.parse(await readFile(join(dir, "checkpoint.json"), "utf8")));

describe("harness-s experiment --env dbbench --policy worker (tiny model)", () => {
  it("runs end to end on SQLite and on MariaDB, writing summary.json and a report with AgentBench's accuracies; a run killed part-way and resumed gives the same summary", async () => {
    // One worker for every run (a run's unit policies live there, so the killed run's resume finds them).
    const worker = await sharedPolicyWorker();
    // Prepare: H0 and three siblings at 3 rounds instead of 15 (a smoke run's length; the tiny model never commits).
    const short = (h: HarnessSpec) => parseHarnessSpec({ ...h, budget: { maxTurns: 3 } });
    const keep = ["dbbench-answer-gate", "dbbench-explained-errors", "dbbench-normalisation-hints"];
    const pool = join(await mkdtemp(join(tmpdir(), "hs-db-pool-")), "pool.json");
    await writeFile(
      pool,
      JSON.stringify(
        createPool("dbbench-smoke", short(dbbenchH0), dbbenchSiblings.filter((s) => keep.includes(s.id)).map(short)),
      ),
    );
    // Act: SQLite, MariaDB, and MariaDB killed after its first (arm, seed) and resumed.
    const sqlite = await mkdtemp(join(tmpdir(), "hs-db-sqlite-"));
    await run("node", [...cli, ...args("sqlite", pool, worker.url), "--out", sqlite], { timeout: 400_000 });
    const mysql = await mkdtemp(join(tmpdir(), "hs-db-mysql-"));
    await run("node", [...cli, ...args("mysql", pool, worker.url), "--out", mysql], { timeout: 400_000 });
    const killed = await mkdtemp(join(tmpdir(), "hs-db-killed-"));
    const child = spawn("node", [...cli, ...args("mysql", pool, worker.url), "--out", killed], { stdio: "ignore" });
    await vi.waitUntil(async () => ((await checkpointOf(killed).catch(() => undefined))?.results.length ?? 0) >= 1, {
      timeout: 400_000,
      interval: 200,
    });
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const { stderr } = await run("node", [...cli, ...args("mysql", pool, worker.url), "--out", killed, "--resume"], {
      timeout: 400_000,
    });
    // Assess
    for (const dir of [sqlite, mysql]) {
      const summary = await summaryOf(dir);
      expect(summary.arms.map((a: { name: string }) => a.name)).toEqual(["grpo", "harness-s"]);
      const report = await readFile(join(dir, "report.md"), "utf8");
      expect(report).toMatch(/## DBBench: AgentBench's accuracies under H0/);
      expect(report).toMatch(/\| initial policy \| [\d.]+% \|/);
      expect(report).toMatch(/\| harness-s \| [\d.]+% \|/);
      const pools = JSON.parse(await readFile(join(dir, "pools.json"), "utf8"));
      expect(pools["1"].siblings.map((s: { id: string }) => s.id)).toContain("dbbench-answer-gate");
    }
    // Every part ran: harness-s rescued with siblings (the tiny model fails every group), and the policies were
    // updated.
    const harness = (await summaryOf(mysql)).arms.find((a: { name: string }) => a.name === "harness-s").perSeed[0];
    expect(harness.rescue.triggered).toBeGreaterThan(0);
    expect(harness.rolloutBreakdown.rescue).toBeGreaterThan(0);
    expect(stderr).toMatch(/resuming: 1 \(arm, seed\) units already finished/);
    expect(await summaryOf(killed)).toEqual(await summaryOf(mysql));
  }, 1_200_000);
});
