import { describe, expect, it, inject } from "vitest";
import { ExperimentRequest, cancelExperiment, startExperiment } from "@harness-s/core/experiment";
import { systemClock } from "@harness-s/core";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startExperimentStack, waitForExperiment } from "../../packages/cli/src/runtime/local-aws.ts";

// One key's long run must not keep another key's short run queued (the coordinator used to take
// a batch of runs and finish the first before polling again), and a running run can be cancelled.
const setup = embeddedSetup(defaultEmbeddedSettings);

describe("the coordinator on the local stack (DynamoDB Local, fauxqs), default settings", () => {
  it("finishes a short run of key B while key A's long run is still going, then cancels A at a step boundary", async () => {
    // Prepare
    const stack = await startExperimentStack(setup, "test", undefined, { dynamoEndpoint: inject("dynamoEndpoint") });
    const start = (id: string, key: string, steps: number) =>
      startExperiment(
        ExperimentRequest.parse({
          seeds: [2],
          arms: ["grpo"],
          train: { steps, batchSize: 8, curveEvery: 0, auditEvery: 0 },
          evalTasks: 4,
        }),
        key,
        {
          experiments: stack.stores.experiments,
          coordinator: stack.queues.coordinator.queue,
          clock: systemClock,
          newId: () => id,
          slots: { meter: stack.stores.meter, limit: 2 },
        },
      );
    try {
      // Act
      await start("exp_long", "key-a", 200);
      await new Promise((r) => setTimeout(r, 1000));
      await start("exp_short", "key-b", 1);
      const short = await waitForExperiment(stack, "exp_short");
      const longWhileShortEnded = await stack.stores.experiments.get("exp_long");
      await cancelExperiment(
        "exp_long",
        { id: "key-a", scopes: ["experiments"] },
        { experiments: stack.stores.experiments, clock: systemClock, meter: stack.stores.meter },
      );
      const long = await waitForExperiment(stack, "exp_long");
      // Assess
      expect(short.status).toBe("done");
      expect(["queued", "running"]).toContain(longWhileShortEnded!.status);
      expect(long.status).toBe("cancelled");
      expect(long.progress.done).toBeLessThan(200);
      expect(await stack.stores.meter.slotsHeld("key-a")).toBe(0);
      expect(await stack.stores.meter.slotsHeld("key-b")).toBe(0);
    } finally {
      await stack.stop();
    }
  }, 180_000);
});

describe("a pool evolution beside another key's experiment (issue 67 item 9)", () => {
  it("at the largest allowed budget, it does not hold the other key's run queued, is metered as it spends, and stops within 10 s of its cancel", async () => {
    const { startOpenEnvServer } = await import("@harness-s/adapters/openenv");
    const { builtinOpenEnv } = await import("../../packages/cli/src/commands/env-serve.ts");
    const { embeddedCallerTask } = await import("@harness-s/envs");
    const { goodSample, startHostilePolicy } = await import("../hostile-policy.ts");
    const { POOL_EVOLUTION_LIMITS: L, EVOLUTION_SLICE_MS } = await import("@harness-s/core/pools");
    const { Direction } = await import("@harness-s/core");
    const { addKey, startApi } = await import("../api-factory.ts");
    // The caller's policy answers every turn with a submit after 50 ms (its 5,000 rollouts take minutes, as a real
    // model's would);
    // its environment is the embedded suite over OpenEnv.
    const policy = await startHostilePolicy(() => ({ json: goodSample(), delayMs: 50 }));
    const env = await startOpenEnvServer(
      await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }),
    );
    const stack = await startExperimentStack(setup, "test", undefined, {
      dynamoEndpoint: inject("dynamoEndpoint"),
      allowLoopbackEndpoints: true,
    });
    const api = await startApi(stack.deps);
    const [a, b] = [
      await addKey(stack.deps, "key-evolver", ["rescues"]),
      await addKey(stack.deps, "key-runner", ["experiments"]),
    ];
    const call = async (key: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${api.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: await res.json() };
    };
    try {
      const inst = await setup.instance(2);
      expect(
        (
          await call(a, "POST", "/v1/policy-endpoints", {
            id: "mine",
            kind: "protocol-v2",
            url: policy.url,
            policy: "p",
          })
        ).status,
      ).toBe(201);
      const largest = {
        directions: Direction.options.filter((d) => d !== "base").slice(0, L.directions),
        rounds: L.rounds,
        candidatesPerRound: L.candidatesPerRound,
        trials: L.trials,
        poolSize: L.poolSize,
        maxRollouts: L.maxRollouts,
      };
      const evolve = {
        endpoint: "mine",
        environment: { kind: "openenv", url: env.url },
        system: "Solve the task with the tools.",
        devTasks: inst.dev.slice(0, 10).map((t) => embeddedCallerTask(setup.env, t)),
        maxTurns: 3,
        evolution: largest,
      };
      const started = await call(a, "POST", "/v1/pools", { evolve });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      const evolution = started.body.id as string;
      // Its first rollouts are running when the other key asks for a small run.
      const t0 = Date.now();
      while ((await stack.stores.poolEvolutions.get(evolution))!.usage.rollouts < 20 && Date.now() - t0 < 60_000)
        await new Promise((r) => setTimeout(r, 200));
      const run = await call(b, "POST", "/v1/experiments", {
        seeds: [2],
        arms: ["grpo"],
        train: { steps: 1, batchSize: 4, curveEvery: 0, auditEvery: 0 },
        evalTasks: 4,
        budget: { rollouts: 200 },
      });
      expect(run.status).toBe(202);
      const asked = Date.now();
      let startedAfterMs: number | undefined;
      while (startedAfterMs === undefined && Date.now() - asked < 60_000) {
        if ((await stack.stores.experiments.get(run.body.id))!.status !== "queued") startedAfterMs = Date.now() - asked;
        else await new Promise((r) => setTimeout(r, 200));
      }
      // Metered as it spends: one slice after the job counted some rollouts, its key was billed at least those.
      const during = (await stack.stores.poolEvolutions.get(evolution))!;
      await new Promise((r) => setTimeout(r, EVOLUTION_SLICE_MS + 500));
      const billed = (await stack.stores.meter.job(evolution)).rollouts;
      const cancelAsked = Date.now();
      const cancel = await call(a, "POST", `/v1/pools/evolutions/${evolution}/cancel`);
      expect(cancel.status).toBe(200);
      let ended = (await stack.stores.poolEvolutions.get(evolution))!;
      while (ended.status === "running" && Date.now() - cancelAsked < 20_000) {
        await new Promise((r) => setTimeout(r, 100));
        ended = (await stack.stores.poolEvolutions.get(evolution))!;
      }
      const cancelledAfterMs = Date.now() - cancelAsked;
      await waitForExperiment(stack, run.body.id);
      const finalBilled = (await stack.stores.meter.job(evolution)).rollouts;
      console.log(
        `evolution beside a run: the run started ${startedAfterMs} ms after it was asked; billed ${billed} of the job's ${during.usage.rollouts} rollouts then; cancelled after ${cancelledAfterMs} ms at ${ended.usage.rollouts} rollouts, ${finalBilled} billed`,
      );
      expect(startedAfterMs).toBeDefined();
      expect(startedAfterMs!).toBeLessThan(60_000);
      expect(during.usage.rollouts).toBeGreaterThan(0);
      expect(billed).toBeGreaterThanOrEqual(during.usage.rollouts);
      expect(ended.status).toBe("cancelled");
      expect(cancelledAfterMs).toBeLessThan(10_000);
      expect(finalBilled).toBe(ended.usage.rollouts);
      expect(ended.usage.rollouts).toBeLessThan(L.maxRollouts);
      expect(await stack.stores.meter.slotsHeld("#evolving:key-evolver")).toBe(0);
    } finally {
      await api.close();
      await stack.stop();
      await env.close();
      await policy.close();
    }
  }, 240_000);
});
