import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { createRng, runEpisode } from "@harness-s/core";
import { envelope } from "@harness-s/core/messaging";
import { rolloutRunners } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import { makeSqsRecord } from "../factories.ts";
import { HttpPolicyEndpoints, RemotePolicy, remoteUnitPolicies } from "@harness-s/adapters/policy";
import { MemoryPoolStore, MemoryRolloutStore } from "@harness-s/adapters/stores";
import { PolicyEndpointError } from "@harness-s/adapters";
import { LogLinearPolicy } from "@harness-s/policy";
import { embeddedPolicyPrior } from "@harness-s/envs";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { createPolicyServer } from "@harness-s/functions/policy";
import { listen } from "../../functions/api/local.ts";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let server: { url: string; close: () => Promise<void> };

beforeAll(async () => {
  inst = await setup.instance(2);
  server = await listen(
    createPolicyServer(() => new LogLinearPolicy({ prior: embeddedPolicyPrior(), cueStrength: 5 })).fetch,
  );
}, 60_000);
afterAll(async () => server?.close());

describe("the policy endpoint over HTTP (harness-s policy-serve)", () => {
  it("creates a policy once, samples, applies an update (version + 1), refuses a stale one", async () => {
    // Prepare
    const policy = new RemotePolicy(server.url, "run1/grpo/2");
    const rollout = await runEpisode(inst.train[0]!, inst.evolution.pool.base, 7, { env: setup.env, policy });
    // Act
    const result = await policy.update({
      baseVersion: 0,
      samples: [{ rollout, advantage: 1 }],
      settings: {
        learningRate: 0.25,
        clipEpsilon: 0.2,
        klCoef: 0,
        epochs: 1,
        rescueContext: "as-generated",
        maskIntercepted: true,
      },
    });
    const again = new RemotePolicy(server.url, "run1/grpo/2");
    await again.ensure();
    // Assess
    expect(rollout.steps.length).toBeGreaterThan(0);
    expect(result.version).toBe(1);
    expect(policy.version()).toBe(1);
    expect(again.version()).toBe(1);
    await expect(
      again.update({
        baseVersion: 0,
        samples: [],
        settings: {
          learningRate: 0.1,
          clipEpsilon: 0.2,
          klCoef: 0,
          epochs: 1,
          rescueContext: "as-generated",
          maskIntercepted: true,
        },
      }),
    ).rejects.toMatchObject({ constructor: StalePolicyVersionError, held: 1, wanted: 0 });
    await expect(
      new RemotePolicy(server.url, "run1/grpo/2", 0).act(rollout.steps[0]!.observation, createRng(1)),
    ).rejects.toMatchObject({
      constructor: StalePolicyVersionError,
      held: 1,
      wanted: 0,
    });
  });

  it("unit policies: a fresh one per attempt, re-attached later at its current version, never created by attaching", async () => {
    // Prepare
    const policies = remoteUnitPolicies(server.url, (unit) => `run2/${unit}/attempt-1`);
    const { id, policy } = await policies.create("harness-s/2", 2);
    const rollout = await runEpisode(inst.train[1]!, inst.evolution.pool.base, 3, { env: setup.env, policy });
    await policy.update({
      baseVersion: 0,
      samples: [{ rollout, advantage: 1 }],
      settings: {
        learningRate: 0.25,
        clipEpsilon: 0.2,
        klCoef: 0,
        epochs: 1,
        rescueContext: "as-generated",
        maskIntercepted: true,
      },
    });
    // Act
    const attached = await policies.attach(id, 2);
    const missing = await policies.attach("run2/nobody/attempt-9", 2);
    // Assess
    expect(id).toBe("run2/harness-s/2/attempt-1");
    expect(attached!.version()).toBe(1);
    expect(missing).toBeUndefined();
    expect(await RemotePolicy.attach(server.url, "run2/nobody/attempt-9")).toBeUndefined();
    await expect(RemotePolicy.attach("http://127.0.0.1:9", id)).rejects.toBeInstanceOf(PolicyEndpointError);
    await policies.release!(id);
    expect(await policies.attach(id, 2)).toBeUndefined();
  });

  it("an unreachable endpoint is a clear error, not a hang", async () => {
    await expect(
      new RemotePolicy("http://127.0.0.1:9", "p").act(inst.train[0] as never, createRng(1)),
    ).rejects.toBeInstanceOf(PolicyEndpointError);
  });

  it("the dispatch worker runs a requested rollout by sampling at the endpoint, at the version asked for", async () => {
    // Prepare
    const pools = new MemoryPoolStore();
    await pools.put(inst.evolution.pool);
    const rollouts = new MemoryRolloutStore();
    const handler = createDispatchHandler({
      pools,
      rollouts,
      tasks: { get: async () => undefined },
      runners: rolloutRunners({ service: new HttpPolicyEndpoints(server.url, setup.env) }),
      log: () => undefined,
    });
    const task = inst.train[3]!;
    const sibling = inst.evolution.pool.siblings[0]!;
    const record = (index: number, policyVersion: number) =>
      makeSqsRecord(
        `m${index}`,
        envelope("rollout.requested", `j:${index}`, {
          jobId: "j",
          index,
          poolId: inst.evolution.pool.id,
          harnessId: sibling.id,
          taskId: task.id,
          seed: index,
          source: { kind: "service", policyId: "run1/grpo/2", version: policyVersion },
          task,
        }),
      );
    // Act
    const out = await handler({ Records: [record(0, 1), record(1, 0)] });
    // Assess: version 1 is current; the request for version 0 is refused and retried by SQS
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: "m1" }]);
    const stored = await rollouts.get("j", 0);
    expect(stored).toMatchObject({ harnessId: sibling.id, taskId: task.id, policyVersion: 1 });
    expect(await rollouts.get("j", 1)).toBeUndefined();
  });
});
