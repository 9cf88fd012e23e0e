import { beforeAll, describe, expect, it } from "vitest";
import { NotConfiguredError, NotFoundError, ValidationError } from "@harness-s/core";
import {
  ArtifactNotFoundError,
  ExperimentConfig,
  ExperimentPlan,
  experimentArtifact,
  experimentPlots,
  publishExperimentReport,
  runExperimentToEnd,
  type ArmSeedResult,
  type ExperimentRecord,
  type ExperimentReportRenderer,
  type ReportInput,
  type SeedBaseline,
} from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { MemoryExperimentArtifacts, MemoryExperimentStore } from "@harness-s/adapters/stores";
import { renderExperimentReport, renderReport } from "@harness-s/adapters/report";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";

const setup = embeddedSetup(defaultEmbeddedSettings);
const train = {
  steps: 1,
  batchSize: 4,
  curveEvery: 1,
  curveTasks: 4,
  auditEvery: 2,
  reanchorEvery: 1,
  reanchorBudget: 6,
};
const request = ExperimentPlan.parse({
  seeds: [3],
  arms: ["grpo", "grpo-budget", "harness-s"],
  train,
  evalSamples: 3,
  evalTasks: 6,
});
const owner = { id: "k1", scopes: ["experiments"] };
let done: ExperimentRecord;

/** A record of `status` with what a run left: its baselines, finished units and (done) summary. */
function recordOf(status: ExperimentRecord["status"], over: Partial<ExperimentRecord> = {}): ExperimentRecord {
  return { ...done, status, summary: undefined, ...over };
}

beforeAll(async () => {
  const baselines: SeedBaseline[] = [];
  const results: { arm: string; result: ArmSeedResult }[] = [];
  const config = ExperimentConfig.parse({ ...request, train: TrainConfig.parse(train) });
  const summary = await runExperimentToEnd(config, {
    ...setup,
    onSeedBaseline: (b) => void baselines.push(b),
    onArmSeed: (arm, result) => void results.push({ arm, result }),
  });
  done = {
    id: "exp_1",
    keyId: "k1",
    request,
    status: "done",
    createdAt: 1,
    updatedAt: 2,
    attempts: 1,
    progress: { done: 3, total: 3, label: "done" },
    usage: { rollouts: 100, computeMs: 10 },
    results,
    baselines,
    units: [],
    summary,
  };
}, 60_000);

/** A renderer that records what it was given and renders one file. */
function recording(): { render: ExperimentReportRenderer; inputs: ReportInput[] } {
  const inputs: ReportInput[] = [];
  const render: ExperimentReportRenderer = async (input) => {
    inputs.push(input);
    return [{ name: "report.md", bytes: new TextEncoder().encode("# r") }];
  };
  return { inputs, render };
}

describe("publishExperimentReport", () => {
  it("stores a done run's report and plots, made by the CLI's code from its summary and each seed's pool with its harm", async () => {
    const artifacts = new MemoryExperimentArtifacts();
    const stored = await publishExperimentReport(done, setup.instance, { artifacts, render: renderExperimentReport });
    // A short run: utilities at one step make no curve, so no utilities plot (issue 70 item 4).
    expect(stored).toEqual(["report.md", "curves.png"]);
    const { evolution } = await setup.instance(3);
    const expected = renderReport(done.summary!, { pools: { "3": { ...evolution.pool, harm: evolution.harm } } });
    expect(new TextDecoder().decode((await artifacts.get("exp_1", "report.md"))!.bytes)).toBe(expected);
    expect(expected).toContain("## Paired differences (H0 Avg@3)");
    expect(expected).toContain("## Side effects of the siblings (harm on dev)");
    const png = (await artifacts.get("exp_1", "curves.png"))!;
    expect([...png.bytes.slice(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png.contentType).toBe("image/png");
  });

  it("a run stopped at its cap: the summary of the units it finished, with a note saying so; none finished, or failed or cancelled: nothing", async () => {
    const { render, inputs } = recording();
    const artifacts = new MemoryExperimentArtifacts();
    const partial = recordOf("stopped", {
      stopReason: "budget cap of 200 rollouts reached",
      results: done.results.filter((r) => r.arm !== "grpo-budget"),
    });
    expect(await publishExperimentReport(partial, setup.instance, { artifacts, render })).toEqual(["report.md"]);
    expect(inputs[0]!.summary.arms.map((a) => a.name)).toEqual(["grpo", "harness-s"]);
    expect(inputs[0]!.summary.arms[0]!.perSeed).toEqual([done.results.find((r) => r.arm === "grpo")!.result]);
    expect(inputs[0]!.note).toBe(
      "Stopped before its end (budget cap of 200 rollouts reached): figures cover the 2 of 3 (arm, seed) units it finished.",
    );
    for (const r of [
      recordOf("stopped", { results: [] }),
      recordOf("failed"),
      recordOf("cancelled"),
      recordOf("running"),
    ]) {
      expect(
        await publishExperimentReport({ ...r, id: `exp_${r.status}` }, setup.instance, { artifacts, render }),
        r.status,
      ).toEqual([]);
    }
    expect(inputs).toHaveLength(1);
  });

  it("never throws: a renderer or store that fails is logged and the run is left as it is", async () => {
    const warnings: string[] = [];
    const failing: ExperimentReportRenderer = async () => {
      throw new Error("resvg crashed");
    };
    const artifacts = new MemoryExperimentArtifacts();
    expect(
      await publishExperimentReport(done, setup.instance, {
        artifacts,
        render: failing,
        logger: { warn: (m) => warnings.push(m) },
      }),
    ).toEqual([]);
    expect(warnings).toEqual(["the report of experiment exp_1 was not stored: resvg crashed"]);
    const badName: ExperimentReportRenderer = async () => [
      { name: "../x.md" as "report.md", bytes: new Uint8Array(1) },
    ];
    expect(
      await publishExperimentReport(done, setup.instance, {
        artifacts,
        render: badName,
        logger: { warn: (m) => warnings.push(m) },
      }),
    ).toEqual([]);
    expect(warnings[1]).toContain("artifact name is invalid");
  });
});

describe("experimentArtifact and experimentPlots", () => {
  it("the key that started the run and admins read it; another key gets not found; a missing file says why", async () => {
    const experiments = new MemoryExperimentStore();
    const artifacts = new MemoryExperimentArtifacts();
    await experiments.create(done);
    await experiments.create(recordOf("running", { id: "exp_2" }));
    await experiments.create(recordOf("failed", { id: "exp_3" }));
    await publishExperimentReport(done, setup.instance, { artifacts, render: renderExperimentReport });
    const deps = { experiments, artifacts };
    expect((await experimentArtifact("exp_1", "report.md", owner, deps)).contentType).toBe(
      "text/markdown; charset=utf-8",
    );
    expect((await experimentArtifact("exp_1", "curves.png", { id: "admin", scopes: ["admin"] }, deps)).name).toBe(
      "curves.png",
    );
    await expect(
      experimentArtifact("exp_1", "report.md", { id: "k2", scopes: ["experiments"] }, deps),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(experimentPlots("exp_1", { id: "k2", scopes: ["experiments"] }, deps)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(experimentArtifact("exp_none", "report.md", owner, deps)).rejects.toBeInstanceOf(NotFoundError);
    await expect(experimentArtifact("exp_2", "report.md", owner, deps)).rejects.toThrow(
      /"exp_2" is running: its report and plots are made when it ends/,
    );
    await expect(experimentArtifact("exp_3", "report.md", owner, deps)).rejects.toThrow(
      /"exp_3" ended failed with no report/,
    );
    await expect(experimentArtifact("exp_1", "sweep.png", owner, deps)).rejects.toBeInstanceOf(ArtifactNotFoundError);
    expect((await experimentPlots("exp_1", owner, deps)).plots).toEqual(["curves.png"]);
    expect((await experimentPlots("exp_2", owner, deps)).plots).toEqual([]);
    await expect(experimentArtifact("exp_1", "../report.md", owner, deps)).rejects.toBeInstanceOf(ValidationError);
    await expect(experimentArtifact("exp_1", "report.md", owner, { experiments })).rejects.toBeInstanceOf(
      NotConfiguredError,
    );
  });
});
