import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExperimentConfig, mergeSummaries, runExperimentToEnd } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { reportCommand } from "../../packages/cli/src/commands/report.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const train = TrainConfig.parse({
  steps: 2,
  batchSize: 4,
  curveEvery: 1,
  curveTasks: 4,
  reanchorEvery: 1,
  reanchorBudget: 6,
});
const configFor = (seeds: number[], over: Partial<ExperimentConfig> = {}) =>
  ExperimentConfig.parse({
    seeds,
    arms: ["grpo", "grpo-budget", "harness-s"],
    train,
    evalSamples: 3,
    evalTasks: 8,
    ...over,
  });

describe("merging runs on disjoint seeds", () => {
  it("gives the summary of one run on all the seeds", async () => {
    // Prepare
    const [three, four, both] = await Promise.all([
      runExperimentToEnd(configFor([3]), setup),
      runExperimentToEnd(configFor([4]), setup),
      runExperimentToEnd(configFor([3, 4]), setup),
    ]);
    // Act
    const merged = mergeSummaries([three, four]);
    // Assess
    expect(merged).toEqual(both);
  }, 120_000);

  it("refuses runs of different configurations, or that share a seed, saying which", async () => {
    const a = await runExperimentToEnd(configFor([3]), setup);
    const b = await runExperimentToEnd(configFor([4], { evalSamples: 4 }), setup);
    expect(() => mergeSummaries([a, b])).toThrow(/run 2 differs from run 1 in config.evalSamples/);
    const validation = { ...b, config: { ...a.config, protocol: "validation" } };
    expect(() => mergeSummaries([a, validation])).toThrow(/run 2 differs from run 1 in config.protocol/);
    expect(() => mergeSummaries([a, a])).toThrow(/seed 3 is in more than one run/);
    expect(() => mergeSummaries([])).toThrow(/nothing to merge/);
  }, 120_000);
});

describe("report over token-level runs", () => {
  it("pools their before-training tables by seed into the report, and leaves them out when a run has none", async () => {
    // Prepare: two runs on disjoint seeds, each with its own start table
    const row = (seed: number) => ({
      seed,
      embedded: { h0: { train: 0.5, heldout: 0 }, siblings: { s1: 0.1 } },
      tokenModel: { h0: { train: 0.25, heldout: 0 }, siblings: { s1: 0.05 } },
      directions: { s1: "recovery" },
    });
    const dirs = await Promise.all(
      [4, 3].map(async (seed) => {
        const dir = await mkdtemp(join(tmpdir(), "hs-report-"));
        await writeFile(join(dir, "summary.json"), JSON.stringify(await runExperimentToEnd(configFor([seed]), setup)));
        await writeFile(join(dir, "start-table.json"), JSON.stringify([row(seed)]));
        return dir;
      }),
    );
    const out = await mkdtemp(join(tmpdir(), "hs-report-out-"));
    // Act
    await reportCommand(dirs, out);
    // Assess
    expect(
      JSON.parse(await readFile(join(out, "start-table.json"), "utf8")).map((r: { seed: number }) => r.seed),
    ).toEqual([3, 4]);
    expect(await readFile(join(out, "report.md"), "utf8")).toMatch(
      /## Before training[\s\S]*\| 3 \| 50\.0% \/ 25\.0%[\s\S]*\| 4 \|/,
    );
    await rm(join(dirs[0]!, "start-table.json"));
    const without = await mkdtemp(join(tmpdir(), "hs-report-out-"));
    await reportCommand(dirs, without);
    expect(await readFile(join(without, "report.md"), "utf8")).not.toContain("## Before training");
  }, 120_000);
});
