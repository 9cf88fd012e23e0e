import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { ExperimentConfig, runExperimentToEnd, type ExperimentSummary } from "@harness-s/core/experiment";
import { TrainConfig } from "@harness-s/core/training";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import {
  runExperimentLocalAws,
  startExperimentStack,
  waitForExperiment,
} from "../../packages/cli/src/runtime/local-aws.ts";
import type { LocalStack } from "@harness-s/functions/local";
import { addKey, startApi } from "../api-factory.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const smallTrain = {
  steps: 2,
  batchSize: 4,
  curveEvery: 1,
  curveTasks: 4,
  auditEvery: 2,
  reanchorEvery: 1,
  reanchorBudget: 6,
};
const config = ExperimentConfig.parse({
  seeds: [3],
  arms: ["grpo", "grpo-budget", "harness-s"],
  train: TrainConfig.parse(smallTrain),
  evalSamples: 3,
  evalTasks: 6,
});

describe("an experiment over --runtime local-aws (DynamoDB Local, fauxqs, dispatch/vote/coordinator handlers)", () => {
  it("produces exactly the in-process summary for the same seed", async () => {
    // Prepare
    const inProcess: ExperimentSummary = await runExperimentToEnd(config, setup);
    // Act
    const progress: number[] = [];
    const viaQueues = await runExperimentLocalAws(config, setup, (done) => progress.push(done), undefined, {
      dynamoEndpoint: inject("dynamoEndpoint"),
    });
    // Assess
    expect(viaQueues).toEqual(inProcess);
    expect(viaQueues.arms.find((a) => a.name === "harness-s")!.perSeed[0]!.rescue.triggered).toBeGreaterThan(0);
    expect(Math.max(...progress)).toBe(config.arms.length * config.train.steps);
  }, 240_000);
});

describe("experiments over the API on the local stack", () => {
  let stack: LocalStack;
  let api: { url: string; close: () => Promise<void> };
  let key: string;

  beforeAll(async () => {
    stack = await startExperimentStack(setup, "test", undefined, { dynamoEndpoint: inject("dynamoEndpoint") });
    api = await startApi(stack.deps);
    key = await addKey(stack.deps, "researcher", ["experiments"]);
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await stack?.stop();
  });

  const call = (path: string, body?: unknown, secret = key) =>
    fetch(`${api.url}${path}`, {
      method: body ? "POST" : "GET",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });

  it("stops a run cleanly at its budget cap, keeps partial results, bills what was used", async () => {
    // Prepare
    const cap = 160; // past the initial evaluation (54 rollouts: 6 tasks per split) and each unit's first step, short of a finished arm (about 270: the two units run side by side)
    // Act
    const started = await call("/v1/experiments", {
      seeds: [3],
      arms: ["grpo", "harness-s"],
      train: smallTrain,
      evalSamples: 3,
      evalTasks: 6,
      budget: { rollouts: cap },
    });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    await waitForExperiment(stack, id);
    const status = await (await call(`/v1/experiments/${id}`)).json();
    await new Promise((r) => setTimeout(r, 1500));
    const later = await (await call(`/v1/experiments/${id}`)).json();
    const metrics = await (await call(`/v1/experiments/${id}/metrics`)).json();
    const { steps } = await (await call(`/v1/experiments/${id}/steps?arm=harness-s`)).json();
    // Assess
    expect(status.status).toBe("stopped");
    expect(status.stopReason).toContain(`${cap} rollouts`);
    expect(status.cost.rollouts).toBe(cap);
    expect(status.cost.usd).toBeGreaterThan(0);
    expect(later.cost.rollouts).toBe(cap);
    expect(metrics.summary).toBeNull();
    expect(metrics.results.length).toBeLessThan(2);
    expect(steps.length).toBeGreaterThan(0);
    expect(steps[0]).toMatchObject({ arm: "harness-s", seed: 3, step: 1 });
    expect(steps[0].groups).toHaveLength(smallTrain.batchSize);
    expect(
      steps
        .flatMap((s: { groups: { outcome: string }[] }) => s.groups.map((g) => g.outcome))
        .every((o: string) => ["used", "replaced", "dropped"].includes(o)),
    ).toBe(true);
    const usage = await (await call("/v1/usage")).json();
    expect(usage.usage.rollouts).toBe(cap);
    // Query parameters are parsed: a seed that is not a number is a 400 naming it, not an empty list
    const bad = await call(`/v1/experiments/${id}/steps?seed=abc`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.issues).toEqual([expect.stringMatching(/^seed: /)]);
    expect((await (await call(`/v1/experiments/${id}/steps?seed=3&arm=harness-s`)).json()).steps.length).toBe(
      steps.length,
    );
    // Issue 67 item 0: the pool the run evolved is its key's: another key neither lists nor reads it (404, as the run
    // itself)
    const stranger = await addKey(stack.deps, "stranger", ["pools:read"]);
    const mine = await addKey(stack.deps, "researcher-pools", ["pools:read"]);
    const listed = async (secret: string) =>
      ((await (await call("/v1/pools", undefined, secret)).json()).pools as { id: string }[]).map((p) => p.id);
    expect(await listed(stranger)).not.toContain(`${id}/pool/3`);
    const poolPath = `/v1/pools/${encodeURIComponent(`${id}/pool/3`)}`;
    const refused = await call(poolPath, undefined, stranger);
    expect([refused.status, (await refused.json()).error.message]).toEqual([404, `pool "${id}/pool/3" not found`]);
    expect((await stack.stores.pools.get(`${id}/pool/3`))?.owner).toBe("researcher");
    expect(await listed(mine)).not.toContain(`${id}/pool/3`);
  }, 120_000);

  it("a run of another protocol than the stack was built for fails with the reason instead of running on the wrong tasks", async () => {
    const started = await call("/v1/experiments", {
      seeds: [3],
      arms: ["grpo"],
      train: smallTrain,
      protocol: "validation",
    });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    const record = await waitForExperiment(stack, id);
    expect(record).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/runs test-protocol experiments, not validation/),
    });
    const bad = await call("/v1/experiments", { seeds: [3], protocol: "dev" });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.issues.join(" ")).toMatch(/protocol/);
  }, 120_000);

  it("answers 400 naming a bad training field, 403 without the scope, 404 for another key's run", async () => {
    const bad = await call("/v1/experiments", { seeds: [1], train: { steps: 0 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain("steps");
    const routeOnly = await addKey(stack.deps, "router-only", ["route"]);
    expect((await call("/v1/experiments", { seeds: [1] }, routeOnly)).status).toBe(403);
    const other = await addKey(stack.deps, "other", ["experiments"]);
    const started = await (
      await call("/v1/experiments", { seeds: [3], arms: ["grpo"], train: smallTrain, budget: { rollouts: 5 } })
    ).json();
    expect((await call(`/v1/experiments/${started.id}`, undefined, other)).status).toBe(404);
    await waitForExperiment(stack, started.id);
  }, 60_000);

  it("a redelivered experiment.requested changes nothing once the run has ended", async () => {
    // Prepare
    const started = await (
      await call("/v1/experiments", { seeds: [3], arms: ["grpo"], train: smallTrain, budget: { rollouts: 50 } })
    ).json();
    const ended = await waitForExperiment(stack, started.id);
    // Act
    await stack.queues.coordinator.queue.send([
      { v: 1, id: `experiment:${started.id}`, type: "experiment.requested", body: { experimentId: started.id } },
    ]);
    await new Promise((r) => setTimeout(r, 2500));
    // Assess
    const after = await stack.stores.experiments.get(started.id);
    expect(after!.attempts).toBe(1);
    expect(after!.updatedAt).toBe(ended.updatedAt);
    expect(after!.usage.rollouts).toBe(50);
  }, 60_000);
});
