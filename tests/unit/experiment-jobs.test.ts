import { describe, expect, it } from "vitest";
import {
  ExperimentRequest,
  LocalPolicyEndpoints,
  ManualClock,
  PolicyVersionMismatchError,
  queuedRolloutRunner,
  runExperimentJob,
  startExperiment,
  systemClock,
  type Envelope,
} from "@harness-s/core";
import { MemoryExperimentStore, MemoryQueue, MemoryRolloutStore, MemoryUsageMeter } from "@harness-s/adapters";
import { defaultEmbeddedSettings, embeddedSetup } from "../../packages/cli/src/embedded.ts";
import { makeSpec } from "../factories.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const tiny = { seeds: [3], arms: ["grpo"], train: { steps: 1, batchSize: 2, curveEvery: 0, auditEvery: 0 }, evalSamples: 3 };

describe("the coordinator use-case", () => {
  it("a crashed coordinator's run is taken over once its lease expires, not before", async () => {
    // Prepare
    const clock = new ManualClock(1_000);
    const experiments = new MemoryExperimentStore();
    const coordinator = new MemoryQueue();
    const meter = new MemoryUsageMeter();
    const rec = await startExperiment(ExperimentRequest.parse(tiny), "k1", { experiments, coordinator, clock, newId: () => "e1" });
    await experiments.claim(rec.id, clock.now(), clock.now() + 60_000); // a worker claims it and dies
    const deps = { experiments, clock, meter, leaseMs: 60_000, prepare: async () => setup };
    // Act + Assess
    expect(await runExperimentJob("e1", deps)).toBe("duplicate");
    clock.advance(60_001);
    const done = await runExperimentJob("e1", deps);
    expect(done).not.toBe("duplicate");
    const stored = (await experiments.get("e1"))!;
    expect(stored.status).toBe("done");
    expect(stored.attempts).toBe(1);
    expect(stored.summary!.arms[0]!.name).toBe("grpo");
    expect(stored.usage.rollouts).toBeGreaterThan(0);
    expect((await meter.get("k1")).rollouts).toBe(stored.usage.rollouts);
    expect(coordinator.take().map((m: Envelope) => m.type)).toEqual(["experiment.requested"]);
  }, 60_000);

  it("a run whose setup fails is marked failed with the reason, and is not retried forever", async () => {
    const experiments = new MemoryExperimentStore();
    await startExperiment(ExperimentRequest.parse(tiny), "k1", { experiments, coordinator: new MemoryQueue(), clock: systemClock, newId: () => "e2" });
    await runExperimentJob("e2", { experiments, clock: systemClock, prepare: () => Promise.reject(new Error("no policy endpoint")) });
    expect(await experiments.get("e2")).toMatchObject({ status: "failed", error: "no policy endpoint" });
    expect(await runExperimentJob("e2", { experiments, clock: systemClock, prepare: async () => setup })).toBe("duplicate");
  });

  it("an unknown experiment is an error (the message goes to the DLQ)", async () => {
    await expect(runExperimentJob("nope", { experiments: new MemoryExperimentStore(), clock: systemClock, prepare: async () => setup })).rejects.toThrow(/not found/);
  });
});

describe("queued rollouts", () => {
  it("calls made in one tick go out as one batch, each resolves with the stored rollout", async () => {
    const dispatch = new MemoryQueue();
    const rollouts = new MemoryRolloutStore();
    const run = queuedRolloutRunner({ jobId: "j", policyId: "p", poolId: "pool", policyVersion: () => 4, dispatch, rollouts, clock: systemClock, pollMs: 1 });
    const task = (await setup.instance(3)).train[0]!;
    const pending = [run(task, makeSpec(), 1), run(task, makeSpec(), 2)];
    await new Promise((r) => setTimeout(r, 5));
    const sent = dispatch.take();
    expect(sent.map((m) => m.id)).toEqual(["j:0", "j:1"]);
    const endpoints = new LocalPolicyEndpoints(setup.env);
    endpoints.register("p", setup.createPolicy(3));
    for (const m of sent) {
      if (m.type !== "rollout.requested") throw new Error("unexpected message");
      expect(m.body.policyVersion).toBe(4);
      const r = await endpoints.runner("p")(m.body.task!, makeSpec(), m.body.seed);
      await rollouts.put("j", m.body.index, r);
    }
    const [a, b] = await Promise.all(pending);
    expect([a!.seed, b!.seed]).toEqual([1, 2]);
  });

  it("the endpoint refuses a rollout for another policy version (the worker retries it)", () => {
    const endpoints = new LocalPolicyEndpoints(setup.env);
    endpoints.register("p", setup.createPolicy(3));
    expect(() => endpoints.runner("p", 7)).toThrow(PolicyVersionMismatchError);
    expect(() => endpoints.runner("missing")).toThrow(/not found/);
  });
});
