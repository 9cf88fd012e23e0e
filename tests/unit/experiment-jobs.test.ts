import { describe, expect, it, vi } from "vitest";
import {
  ExperimentRequest,
  inProcessRunners,
  queuedRolloutRunner,
  runExperimentJob,
  startExperiment,
  type ExperimentStepStore,
} from "@harness-s/core/experiment";
import { LocalPolicyEndpoints } from "@harness-s/core/dispatch";
import { ManualClock, systemClock, memoryLogger, type Policy } from "@harness-s/core";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { QUOTE_BASIS_KEY, quoteBasisOn } from "@harness-s/core/quoting";
import type { Envelope } from "@harness-s/core/messaging";
import { MemoryExperimentStore, MemoryQueue, MemoryRolloutStore, MemoryUsageMeter } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedSetup, embeddedSetups } from "@harness-s/envs";
import { makeSpec } from "../factories.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const tiny = {
  seeds: [3],
  arms: ["grpo"],
  train: { steps: 1, batchSize: 2, curveEvery: 0, auditEvery: 0 },
  evalSamples: 3,
};

describe("the coordinator use-case", () => {
  it("a crashed coordinator's run is taken over once its lease expires, not before", async () => {
    // Prepare
    const clock = new ManualClock(1_000);
    const experiments = new MemoryExperimentStore();
    const coordinator = new MemoryQueue();
    const meter = new MemoryUsageMeter();
    const rec = await startExperiment(ExperimentRequest.parse(tiny), "k1", {
      experiments,
      coordinator,
      clock,
      newId: () => "e1",
    });
    await experiments.claim(rec.id, clock.now(), clock.now() + 60_000); // a worker claims it and dies
    // What the coordinator's invocation has not billed when the run ends joins the quote basis
    const deps = {
      experiments,
      clock,
      meter,
      leaseMs: 60_000,
      prepare: async () => setup,
      unbilled: () => ({ sqsRequests: 7 }),
      quoteBasis: quoteBasisOn(meter),
    };
    // Act + Assess: a delivery meanwhile leaves it, and asks to look again once the lease lapses (issue 71: the
    // message is not lost while a dead attempt's lease runs out).
    const watch = new MemoryQueue();
    clock.advance(20_000);
    expect(await runExperimentJob("e1", { ...deps, continueOn: watch })).toBe("duplicate");
    expect(watch.take().map((m: Envelope) => m.type)).toEqual(["experiment.requested"]);
    expect(watch.delays).toEqual([41]);
    clock.advance(40_001);
    const done = await runExperimentJob("e1", { ...deps, continueOn: watch });
    expect(done).not.toBe("duplicate");
    const stored = (await experiments.get("e1"))!;
    expect(stored.status).toBe("done");
    expect(stored.attempts).toBe(1);
    expect(stored.summary!.arms[0]!.name).toBe("grpo");
    expect(stored.usage.rollouts).toBeGreaterThan(0);
    expect((await meter.get("k1")).rollouts).toBe(stored.usage.rollouts);
    expect(await meter.get(QUOTE_BASIS_KEY)).toMatchObject({
      requests: 1,
      rollouts: stored.usage.rollouts,
      sqsRequests: 7,
    });
    expect(coordinator.take().map((m: Envelope) => m.type)).toEqual(["experiment.requested"]);
    // A delivery after the run ended asks for nothing more.
    expect(await runExperimentJob("e1", { ...deps, continueOn: watch })).toBe("duplicate");
    expect(watch.take()).toEqual([]);
  }, 60_000);

  it("a finished run's usage and its place in the quotes' basis are metered before it is saved done", async () => {
    // Prepare: a store that notes, at the save that ends the run, what the meter already holds.
    const clock = systemClock;
    const meter = new MemoryUsageMeter();
    const experiments = new MemoryExperimentStore();
    const atEnd: { job: number; basis: number }[] = [];
    const save = experiments.save.bind(experiments);
    experiments.save = async (record) => {
      if (record.status === "done")
        atEnd.push({ job: (await meter.job(record.id)).rollouts, basis: (await meter.get(QUOTE_BASIS_KEY)).requests });
      return save(record);
    };
    await startExperiment(ExperimentRequest.parse(tiny), "k1", {
      experiments,
      coordinator: new MemoryQueue(),
      clock,
      newId: () => "e-order",
    });
    // Act
    await runExperimentJob("e-order", {
      experiments,
      clock,
      meter,
      prepare: async () => setup,
      quoteBasis: quoteBasisOn(meter),
    });
    // Assess: a reader that sees it done sees its rollouts metered and a quote resting on it; its compute time is the
    // one metered.
    const stored = (await experiments.get("e-order"))!;
    expect(stored.usage.rollouts).toBeGreaterThan(0);
    expect(atEnd).toEqual([{ job: stored.usage.rollouts, basis: 1 }]);
    expect(stored.usage.computeMs).toBeGreaterThan(0);
    expect((await meter.job("e-order")).computeMs).toBe(stored.usage.computeMs);
  }, 60_000);

  it("a run whose setup fails is marked failed with the reason, and is not retried forever", async () => {
    const experiments = new MemoryExperimentStore();
    await startExperiment(ExperimentRequest.parse(tiny), "k1", {
      experiments,
      coordinator: new MemoryQueue(),
      clock: systemClock,
      newId: () => "e2",
    });
    await runExperimentJob("e2", {
      experiments,
      clock: systemClock,
      prepare: () => Promise.reject(new Error("no policy endpoint")),
    });
    expect(await experiments.get("e2")).toMatchObject({ status: "failed", error: "no policy endpoint" });
    expect(await runExperimentJob("e2", { experiments, clock: systemClock, prepare: async () => setup })).toBe(
      "duplicate",
    );
  });

  // Issue 70 item 3: the label says what the run does at every poll, never "queued" while it runs.
  it("the progress label says what the run does: preparing, evaluating, each step, then done; a failed run says why", async () => {
    const experiments = new MemoryExperimentStore();
    const start = (id: string) =>
      startExperiment(ExperimentRequest.parse(tiny), "k1", {
        experiments,
        coordinator: new MemoryQueue(),
        clock: systemClock,
        newId: () => id,
      });
    await start("e-labels");
    const seen: string[] = [];
    const look = async () => {
      const r = (await experiments.get("e-labels"))!;
      seen.push(`${r.status} ${r.progress.label}`);
    };
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const running = runExperimentJob("e-labels", {
      experiments,
      clock: systemClock,
      prepare: async () => {
        await look();
        await held;
        return setup;
      },
    });
    await vi.waitFor(() => expect(seen.length).toBe(1));
    release();
    await running;
    await look();
    expect(seen).toEqual(["running running: preparing the environment and its pool (0 rollouts so far)", "done done"]);
    await start("e-fails");
    await runExperimentJob("e-fails", {
      experiments,
      clock: systemClock,
      prepare: () => Promise.reject(new Error("no policy endpoint")),
    });
    expect((await experiments.get("e-fails"))!.progress.label).toBe("failed: no policy endpoint");
  });

  it("a validation-protocol request runs on the validation instances and its summary says so", async () => {
    // Prepare
    const experiments = new MemoryExperimentStore();
    const setupFor = embeddedSetups(defaultEmbeddedSettings);
    await startExperiment(ExperimentRequest.parse({ ...tiny, protocol: "validation" }), "k1", {
      experiments,
      coordinator: new MemoryQueue(),
      clock: systemClock,
      newId: () => "e-val",
    });
    // Act
    await runExperimentJob("e-val", {
      experiments,
      clock: systemClock,
      prepare: async (record) => setupFor(record.request.protocol),
    });
    // Assess
    const stored = (await experiments.get("e-val"))!;
    expect(stored.status).toBe("done");
    expect(stored.summary!.config.protocol).toBe("validation");
    expect(Object.keys(stored.summary!.arms[0]!.perSeed[0]!.byCombination.heldout).sort()).toEqual([
      "app:docs+auth",
      "db:format+mutation",
      "repair:tricky+blocked",
    ]);
    expect(setupFor("validation")).toBe(setupFor("validation"));
    expect(setupFor("test")).not.toBe(setupFor("validation"));
  });

  it("a step record that cannot be written does not stop the run, and says so in the log", async () => {
    // Prepare: a step store that is down
    const experiments = new MemoryExperimentStore();
    const logger = memoryLogger();
    const steps: ExperimentStepStore = {
      put: async () => Promise.reject(new Error("table is down")),
      list: async () => [],
    };
    await startExperiment(ExperimentRequest.parse(tiny), "k1", {
      experiments,
      coordinator: new MemoryQueue(),
      clock: systemClock,
      newId: () => "e-log",
    });
    // Act
    await runExperimentJob("e-log", { experiments, clock: systemClock, steps, logger, prepare: async () => setup });
    await new Promise((r) => setTimeout(r, 0));
    // Assess
    expect((await experiments.get("e-log"))!.status).toBe("done");
    expect(logger.lines).toEqual([expect.stringMatching(/^step record e-log grpo\/3 step 1 failed: table is down$/)]);
  });

  it("an unknown experiment is an error (the message goes to the DLQ)", async () => {
    await expect(
      runExperimentJob("nope", {
        experiments: new MemoryExperimentStore(),
        clock: systemClock,
        prepare: async () => setup,
      }),
    ).rejects.toThrow(/not found/);
  });
});

describe("queued rollouts", () => {
  it("calls made in one tick go out as one batch, each resolves with the stored rollout", async () => {
    const dispatch = new MemoryQueue();
    const rollouts = new MemoryRolloutStore();
    const run = queuedRolloutRunner({
      jobId: "j",
      policyId: "p",
      poolId: "pool",
      policyVersion: () => 4,
      dispatch,
      rollouts,
      clock: systemClock,
      pollMs: 1,
    });
    const task = (await setup.instance(3)).train[0]!;
    const pending = [run(task, makeSpec(), 1), run(task, makeSpec(), 2)];
    await new Promise((r) => setTimeout(r, 5));
    const sent = dispatch.take();
    expect(sent.map((m) => m.id)).toEqual(["j:0", "j:1"]);
    const endpoints = new LocalPolicyEndpoints(setup.env);
    endpoints.register("p", setup.createPolicy(3));
    for (const m of sent) {
      if (m.type !== "rollout.requested") throw new Error("unexpected message");
      expect(m.body.source).toEqual({ kind: "service", policyId: "p", version: 4 });
      const r = await (await endpoints.runner({ kind: "service", policyId: "p" }))(
        m.body.task!,
        makeSpec(),
        m.body.seed,
      );
      await rollouts.put("j", m.body.index, r);
    }
    const [a, b] = await Promise.all(pending);
    expect([a!.seed, b!.seed]).toEqual([1, 2]);
  });

  it("the endpoint refuses a rollout for another policy version (the worker retries it)", async () => {
    const endpoints = new LocalPolicyEndpoints(setup.env);
    endpoints.register("p", setup.createPolicy(3));
    await expect(endpoints.runner({ kind: "service", policyId: "p", version: 7 })).rejects.toThrow(
      StalePolicyVersionError,
    );
    await expect(endpoints.runner({ kind: "service", policyId: "missing" })).rejects.toThrow(/not found/);
  });
});

describe("long runs: time slices and resumption", () => {
  const run2x2 = {
    seeds: [3, 4],
    arms: ["grpo", "harness-s"],
    train: { steps: 2, batchSize: 4, curveEvery: 0, auditEvery: 0 },
    evalSamples: 3,
  };
  /** The embedded setup with every policy id the runners were asked for recorded in `ids`. */
  const recording = (ids: string[], hangOn?: string) => async () => ({
    ...setup,
    runnerFor: (id: string, policy: Policy, seed: number) => {
      ids.push(id);
      const run = inProcessRunners(setup.env)(id, policy, seed);
      return hangOn === id ? () => new Promise<never>(() => undefined) : run;
    },
  });

  async function oneLongAttempt() {
    const experiments = new MemoryExperimentStore();
    await startExperiment(ExperimentRequest.parse(run2x2), "k1", {
      experiments,
      coordinator: new MemoryQueue(),
      clock: systemClock,
      newId: () => "ref",
    });
    await runExperimentJob("ref", { experiments, clock: systemClock, prepare: recording([]) });
    return (await experiments.get("ref"))!;
  }

  it("a run past its time slice re-queues itself, resumes after what it finished, and ends with the same summary and usage", async () => {
    // Prepare
    const reference = await oneLongAttempt();
    const experiments = new MemoryExperimentStore();
    const coordinator = new MemoryQueue();
    const meter = new MemoryUsageMeter();
    await startExperiment(ExperimentRequest.parse(run2x2), "k1", {
      experiments,
      coordinator,
      clock: systemClock,
      newId: () => "e3",
    });
    const ids: string[] = [];
    const deps = {
      experiments,
      clock: systemClock,
      meter,
      sliceMs: 0,
      continueOn: coordinator,
      prepare: recording(ids),
    };
    // Act: deliver each message the coordinator queue receives, as the worker would
    const labels: string[] = [];
    const envelopeIds: string[] = [];
    for (let m = coordinator.take(); m.length && labels.length < 10; m = coordinator.take()) {
      envelopeIds.push(...m.map((e: Envelope) => e.id));
      await runExperimentJob("e3", deps);
      labels.push((await experiments.get("e3"))!.progress.label);
    }
    // Assess: one (arm, seed) unit per attempt, nothing run twice, same results as one attempt
    const stored = (await experiments.get("e3"))!;
    expect(stored.status).toBe("done");
    expect(stored.attempts).toBe(4);
    expect(labels).toEqual([
      "continuing: 3 (arm, seed) units left",
      "continuing: 2 (arm, seed) units left",
      "continuing: 1 (arm, seed) units left",
      "done",
    ]);
    expect(new Set(envelopeIds).size).toBe(4);
    expect(ids).toEqual(["initial/3", "harness-s/3", "grpo/3", "initial/4", "harness-s/4", "grpo/4"]);
    expect(stored.summary).toEqual(reference.summary);
    expect(stored.usage.rollouts).toBe(reference.usage.rollouts);
    expect((await meter.get("k1")).rollouts).toBe(reference.usage.rollouts);
  }, 120_000);

  /** Policies kept at a pretend endpoint (a map), so units can continue across attempts. */
  function endpointPolicies() {
    const held = new Map<string, Policy>();
    let n = 0;
    const policies = {
      create: async (unit: string, seed: number) => {
        const id = `${unit}/p${++n}`;
        const policy = setup.createPolicy(seed);
        held.set(id, policy);
        return { id, policy };
      },
      attach: async (id: string) => held.get(id),
      release: async (id: string) => void held.delete(id),
    };
    return { held, policies };
  }

  async function sliceEveryStep(
    id: string,
    onAttempt: (attempt: number, held: Map<string, Policy>) => void = () => undefined,
  ) {
    const experiments = new MemoryExperimentStore();
    const coordinator = new MemoryQueue();
    await startExperiment(ExperimentRequest.parse(run2x2), "k1", {
      experiments,
      coordinator,
      clock: systemClock,
      newId: () => id,
    });
    const { held, policies } = endpointPolicies();
    const deps = {
      experiments,
      clock: systemClock,
      sliceMs: 0,
      continueOn: coordinator,
      prepare: async () => ({ ...setup, policies }),
    };
    const steps: number[] = [];
    const labels: string[] = [];
    const decisionsKept: number[] = [];
    for (let m = coordinator.take(), attempt = 1; m.length && attempt < 20; m = coordinator.take(), attempt++) {
      await runExperimentJob(id, deps);
      const rec = (await experiments.get(id))!;
      steps.push(rec.units[0]?.state.step ?? 0);
      decisionsKept.push(...rec.units.map((u) => u.state.decisions.length));
      labels.push(rec.progress.label);
      onAttempt(attempt, held);
    }
    return { stored: (await experiments.get(id))!, steps, labels, held, decisionsKept };
  }

  it("with policies that outlive an attempt, a slice can end between two training steps and the unit continues there", async () => {
    // Prepare
    const reference = await oneLongAttempt();
    // Act
    const { stored, steps, labels, held, decisionsKept } = await sliceEveryStep("e5");
    // Assess: each 2-step unit takes two attempts, paused after its first step
    expect(stored.status).toBe("done");
    expect(stored.attempts).toBe(8);
    expect(steps).toEqual([1, 0, 1, 0, 1, 0, 1, 0]);
    expect(labels.slice(0, 2)).toEqual([
      "continuing: 4 (arm, seed) units left, harness-s/3 paused after step 1",
      "continuing: 3 (arm, seed) units left",
    ]);
    expect(stored.units).toEqual([]);
    expect(decisionsKept.length).toBeGreaterThan(0);
    expect(decisionsKept.every((n) => n === 0)).toBe(true); // the record keeps no routing decisions, so it does not grow with them
    expect(held.size).toBe(0); // every unit's policy was released once its results were saved
    expect(stored.summary).toEqual(reference.summary);
    expect(stored.usage.rollouts).toBe(reference.usage.rollouts);
  }, 120_000);

  it("a unit whose policy is gone when the run continues starts over, with the same results", async () => {
    const reference = await oneLongAttempt();
    const { stored, held } = await sliceEveryStep("e6", (attempt, policies) => {
      if (attempt === 1) policies.clear(); // the endpoint lost harness-s/3's policy after its first step
    });
    expect(held.size).toBe(0);
    expect(stored.status).toBe("done");
    expect(stored.summary).toEqual(reference.summary);
    expect(stored.usage.rollouts).toBeGreaterThan(reference.usage.rollouts); // the lost step was spent, and is billed
  }, 120_000);

  it("a unit whose policy moved past its checkpoint (an update after the last save) starts over and the stale policy is freed", async () => {
    const reference = await oneLongAttempt();
    const { stored, held } = await sliceEveryStep("e7", (attempt, policies) => {
      if (attempt !== 1) return;
      const [policy] = [...policies.values()];
      void policy!.update({
        baseVersion: policy!.version(),
        samples: [],
        settings: {
          learningRate: 0.1,
          clipEpsilon: 0.2,
          klCoef: 0,
          epochs: 1,
          rescueContext: "as-generated",
          maskIntercepted: true,
        },
      });
    });
    expect(stored.status).toBe("done");
    expect(stored.summary).toEqual(reference.summary);
    expect(stored.usage.rollouts).toBeGreaterThan(reference.usage.rollouts);
    expect(held.size).toBe(0);
  }, 120_000);

  it("a crashed attempt's finished units survive: the takeover skips them", async () => {
    // Prepare: the first attempt finishes seed 3's baseline and harness-s, then hangs on grpo (a dead worker)
    const reference = await oneLongAttempt();
    const clock = new ManualClock(1_000);
    const experiments = new MemoryExperimentStore();
    await startExperiment(ExperimentRequest.parse(run2x2), "k1", {
      experiments,
      coordinator: new MemoryQueue(),
      clock,
      newId: () => "e4",
    });
    void runExperimentJob("e4", { experiments, clock, leaseMs: 60_000, prepare: recording([], "grpo/3") });
    await vi.waitUntil(async () => (await experiments.get("e4"))!.results.length === 1, {
      timeout: 60_000,
      interval: 20,
    });
    // Act: the lease runs out and another worker takes the run over
    clock.advance(60_001);
    const ids: string[] = [];
    await runExperimentJob("e4", { experiments, clock, leaseMs: 60_000, prepare: recording(ids) });
    // Assess
    const stored = (await experiments.get("e4"))!;
    expect(stored).toMatchObject({ status: "done", attempts: 2 });
    expect(ids).toEqual(["grpo/3", "initial/4", "harness-s/4", "grpo/4"]);
    expect(stored.summary).toEqual(reference.summary);
  }, 120_000);
});
