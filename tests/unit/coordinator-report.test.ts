import { describe, expect, it } from "vitest";
import { systemClock } from "@harness-s/core";
import { ExperimentPlan, type ExperimentRecord, type ExperimentReportRenderer } from "@harness-s/core/experiment";
import { envelope } from "@harness-s/core/messaging";
import { MemoryExperimentArtifacts, MemoryExperimentStore } from "@harness-s/adapters/stores";
import { renderExperimentReport } from "@harness-s/adapters/report";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { createCoordinatorHandler } from "../../functions/coordinator/handler.ts";
import { makeSqsEvent } from "../factories.ts";

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

function queued(id: string): ExperimentRecord {
  return {
    id,
    keyId: "k1",
    request: ExperimentPlan.parse({ seeds: [3], arms: ["grpo", "harness-s"], train, evalTasks: 6 }),
    status: "queued",
    createdAt: 1,
    updatedAt: 1,
    attempts: 0,
    progress: { done: 0, total: 2, label: "queued" },
    usage: { rollouts: 0, computeMs: 0 },
    results: [],
    baselines: [],
    units: [],
  };
}

/** A store that notes, at each save, the run's status and which artifacts it had by then. */
class WatchedStore extends MemoryExperimentStore {
  readonly seen: { status: string; artifacts: string[] }[] = [];
  constructor(private readonly artifacts: MemoryExperimentArtifacts) {
    super();
  }
  override async save(record: ExperimentRecord): Promise<void> {
    this.seen.push({ status: record.status, artifacts: await this.artifacts.list(record.id) });
    return super.save(record);
  }
}

async function runOnce(id: string, render: ExperimentReportRenderer) {
  const artifacts = new MemoryExperimentArtifacts();
  const experiments = new WatchedStore(artifacts);
  const warnings: string[] = [];
  await experiments.create(queued(id));
  const handler = createCoordinatorHandler({
    experiments,
    clock: systemClock,
    prepare: async () => setup,
    reports: { artifacts, render },
    logger: { warn: (m) => warnings.push(m) },
  });
  const out = await handler(makeSqsEvent([envelope("experiment.requested", `experiment:${id}`, { experimentId: id })]));
  return { out, artifacts, experiments, warnings };
}

describe("the coordinator with reports", () => {
  it("stores the report and plots before the run reads as done", async () => {
    const { out, artifacts, experiments } = await runOnce("exp_c1", renderExperimentReport);
    expect(out.batchItemFailures).toEqual([]);
    expect((await experiments.get("exp_c1"))!.status).toBe("done");
    // One training step: the siblings' utilities were measured at one step only, so there is no utilities plot.
    expect(await artifacts.list("exp_c1")).toEqual(["curves.png", "report.md"]);
    expect(experiments.seen.at(-1)).toEqual({
      status: "done",
      artifacts: ["curves.png", "report.md"],
    });
  }, 60_000);

  it("a renderer that fails is logged; the run ends done with its results all the same", async () => {
    const { out, artifacts, experiments, warnings } = await runOnce("exp_c2", async () => {
      throw new Error("no fonts");
    });
    expect(out.batchItemFailures).toEqual([]);
    const record = (await experiments.get("exp_c2"))!;
    expect(record.status).toBe("done");
    expect(record.summary?.arms.map((a) => a.name)).toEqual(["grpo", "harness-s"]);
    expect(await artifacts.list("exp_c2")).toEqual([]);
    expect(warnings).toEqual(["the report of experiment exp_c2 was not stored: no fonts"]);
  }, 60_000);
});
