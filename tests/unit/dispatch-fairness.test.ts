import { describe, expect, it } from "vitest";
import { CALLER_ROLLOUT_FAIRNESS, rolloutRunners, type CallerPolicies, type RolloutRequestedBody } from "@harness-s/core/rescue";
import { MAX_DEFERRALS, envelope, type EnvelopeOf } from "@harness-s/core/messaging";
import { ManualClock } from "@harness-s/core";
import { MemoryQueue, MemoryRescueJobStore, MemoryRescueSlots, MemoryRolloutStore } from "@harness-s/adapters";
import { CANCEL_CHECK_EVERY, createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { callerSlotSource, makeSqsEvent } from "../factories.ts";

// Issue 52, item 4: a caller rollout past its key's running places waits its turn on the queue
// (sent again, delayed, its deferral counted), a waiting one of a cancelled rescue is dropped at
// the next check, and one that waited MAX_DEFERRALS times fails its slot with its code.
const caller = callerSlotSource;
const body = (index: number): RolloutRequestedBody => ({
  jobId: "rsc_1",
  index,
  poolId: "p",
  harnessId: "h0",
  taskId: "t1",
  seed: 1,
  source: { kind: "caller", ...caller },
  rescueJob: true,
});

async function setup() {
  const clock = new ManualClock(1_000);
  const running = new MemoryRescueSlots();
  const jobs = new MemoryRescueJobStore();
  const requeue = new MemoryQueue();
  await jobs.create({ id: "rsc_1", poolId: "p", taskId: "t1", decisionId: "d", chosen: ["h0"], rolloutsPerHarness: 8, expected: 8, createdAt: 0, keyId: "k-a", caller });
  // Every one of the key's running places is taken by other slots.
  for (let i = 0; i < CALLER_ROLLOUT_FAIRNESS.perKeyRunning; i++)
    await running.hold("k-a", `rsc_1:${100 + i}`, 1, CALLER_ROLLOUT_FAIRNESS.perKeyRunning, clock.now(), clock.now() + 60_000);
  const callers: CallerPolicies = {
    checkEnvironment: async () => undefined,
    checkEndpoint: async () => undefined,
    currentVersion: async () => 0,
    datums: async () => [],
    runner: () => Promise.reject(new Error("must not run")),
  };
  const handler = createDispatchHandler({
    pools: { get: async () => undefined, put: async () => undefined, list: async () => [] },
    tasks: { get: async () => undefined },
    rollouts: new MemoryRolloutStore(),
    runners: rolloutRunners({ caller: callers }),
    jobs,
    fairness: { slots: running, clock, requeue },
    log: () => undefined,
  });
  return { handler, jobs, requeue, running, clock };
}

const message = (index: number, deferrals?: number): EnvelopeOf<"rollout.requested"> => ({
  ...envelope("rollout.requested", `rsc_1:${index}`, body(index), { keyId: "k-a", jobId: "rsc_1" }),
  ...(deferrals ? { deferrals } : {}),
});

describe("a caller rollout past its key's running places", () => {
  it("is sent again, delayed, with its deferral counted, and nothing runs", async () => {
    const { handler, requeue } = await setup();
    expect(await handler(makeSqsEvent([message(0)]))).toEqual({ batchItemFailures: [] });
    const [again] = requeue.take();
    expect(again).toMatchObject({ id: "rsc_1:0", deferrals: 1, body: { index: 0 } });
    expect(requeue.delays[0]).toBeGreaterThanOrEqual(1);
    expect(requeue.delays[0]).toBeLessThanOrEqual(8);
  });

  it("of a cancelled rescue is dropped at the next check instead of waiting again", async () => {
    const { handler, requeue, jobs } = await setup();
    await jobs.cancel("rsc_1", 2_000);
    await handler(makeSqsEvent([message(1, CANCEL_CHECK_EVERY - 2)]));
    expect(requeue.take()).toHaveLength(1);
    await handler(makeSqsEvent([message(1, CANCEL_CHECK_EVERY - 1)]));
    expect(requeue.take()).toHaveLength(0);
  });

  it("fails its slot with CONCURRENCY_LIMIT once it has waited MAX_DEFERRALS times", async () => {
    const { handler, requeue, jobs } = await setup();
    await handler(makeSqsEvent([message(2, MAX_DEFERRALS)]));
    expect(requeue.take()).toHaveLength(0);
    expect((await jobs.get("rsc_1"))!.failures).toEqual([{ index: 2, code: "CONCURRENCY_LIMIT", reason: `waited ${MAX_DEFERRALS} times for one of its key's running places` }]);
  });

  it("runs once a place is free (here: fails at once at the caller's runner, its code recorded)", async () => {
    const { handler, requeue, jobs, running } = await setup();
    await running.release("k-a", "rsc_1:100");
    await handler(makeSqsEvent([message(3, 2)]));
    expect(requeue.take()).toHaveLength(0);
    expect((await jobs.get("rsc_1"))!.failures?.[0]).toMatchObject({ index: 3, code: "NOT_FOUND" });
  });
});
