import { describe, expect, it } from "vitest";
import {
  rolloutRunners,
  type CallerPolicies,
  type RescueSlots,
  type RolloutRequestedBody,
} from "@harness-s/core/dispatch";
import { envelope } from "@harness-s/core/messaging";
import { ManualClock } from "@harness-s/core";
import {
  FullSlotsMemo,
  MemoryQueue,
  MemoryRescueJobStore,
  MemoryRescueSlots,
  MemoryRolloutStore,
  MemoryUsageMeter,
} from "@harness-s/adapters/stores";
import { createDispatchHandler } from "../../functions/dispatch/handler.ts";
import { callerSlotSource, idleCallerPolicies, makeRollout, makeSqsEvent, makeTask } from "../factories.ts";

// Issue 54 (the rescue bench at 50 ms a turn): the slots of one SQS batch of one rescue share
// their store requests: one read of the rescue, one "stored already?" for all, their running
// places held in one call, their spend added to the rescue and metered to the key in one write
// each; every slot's rollout is still stored on its own and every spend is metered.
const caller = callerSlotSource;
const body = (index: number): RolloutRequestedBody => ({
  jobId: "rsc_1",
  index,
  poolId: "p",
  harnessId: "h0",
  taskId: "t1",
  seed: index,
  source: { kind: "caller", ...caller },
  rescueJob: true,
});

/** `target` with each method's calls counted in `calls`. */
function counted<T extends object>(target: T, calls: Record<string, number>): T {
  return new Proxy(target, {
    get: (t, prop) => {
      const value = Reflect.get(t, prop, t) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls[String(prop)] = (calls[String(prop)] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}

/**
 * Resolves once `n` callers wait on it, all in one turn: the batch's runs end together, as a batch's slots do when
 * their turns are alike.
 */
function barrier(n: number): () => Promise<void> {
  const waiting: (() => void)[] = [];
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === n) for (const r of waiting.splice(0)) r();
    });
}

async function setup() {
  const clock = new ManualClock(1_000);
  const allStarted = barrier(8);
  const calls = { jobs: {}, rollouts: {}, meter: {}, slots: {}, runner: {} } as Record<
    "jobs" | "rollouts" | "meter" | "slots" | "runner",
    Record<string, number>
  >;
  const jobs = new MemoryRescueJobStore();
  await jobs.create({
    id: "rsc_1",
    poolId: "p",
    taskId: "t1",
    decisionId: "d",
    chosen: ["h0"],
    rolloutsPerHarness: 8,
    expected: 8,
    createdAt: 0,
    keyId: "k-a",
    caller,
  });
  const rollouts = new MemoryRolloutStore();
  const meter = new MemoryUsageMeter();
  const inner = new MemoryRescueSlots();
  const running: RescueSlots = {
    hold: (...a) => inner.hold(...a),
    holdMany: async (k, holds) => {
      const out: boolean[] = [];
      for (const h of holds) out.push(await inner.hold(k, h.id, h.slots, h.limit, h.now, h.until));
      return out;
    },
    release: (k, id) => inner.release(k, id),
    held: (k, now) => inner.held(k, now),
  };
  const callers: CallerPolicies = {
    ...idleCallerPolicies(0),
    runner: async (_source, onSpend) => {
      calls.runner.runner = (calls.runner.runner ?? 0) + 1;
      return async (_task, harness, seed) => {
        await allStarted();
        onSpend?.({ policyTokens: 10 + seed, policyMs: 50, environmentMs: 2 });
        return makeRollout({ harnessId: harness.id, reward: seed });
      };
    },
  };
  const handler = createDispatchHandler({
    pools: {
      get: async () => ({ id: "p", base: { id: "h0" }, siblings: [] }) as never,
      put: async () => undefined,
      list: async () => [],
    },
    tasks: { get: async () => makeTask({ id: "t1" }) },
    rollouts: counted(rollouts, calls.rollouts),
    runners: rolloutRunners({ caller: callers }),
    jobs: counted(jobs, calls.jobs),
    meter: counted(meter, calls.meter),
    fairness: { slots: new FullSlotsMemo(counted(running, calls.slots), clock), clock, requeue: new MemoryQueue() },
    log: () => undefined,
  });
  return { handler, calls, jobs, rollouts, meter, inner, clock };
}

describe("a batch of one rescue's caller slots", () => {
  it("costs one rescue read, one duplicate check and one hold for the batch, and one spend and meter write per slot (marked by its slot: metered once under redelivery), stores every rollout and meters every spend", async () => {
    const { handler, calls, jobs, rollouts, meter, inner, clock } = await setup();
    const messages = Array.from({ length: 8 }, (_, i) =>
      envelope("rollout.requested", `rsc_1:${i}`, body(i), { keyId: "k-a", jobId: "rsc_1" }),
    );
    expect(await handler(makeSqsEvent(messages))).toEqual({ batchItemFailures: [] });
    expect((await jobs.get("rsc_1"))?.failures).toBeUndefined();
    expect((await rollouts.list("rsc_1")).map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(calls.rollouts).toMatchObject({ getMany: 1, put: 8 });
    expect(calls.rollouts.has ?? 0).toBe(0);
    expect(calls.jobs.get).toBe(1);
    expect(calls.slots).toMatchObject({ holdMany: 1 });
    expect(calls.slots.hold ?? 0).toBe(0);
    // Issue 71: a finished slot's spend is written with its slot (refused when there already), so slots' spends are
    // not added together; each is its own write.
    expect(calls.jobs.addSpend).toBe(8);
    expect(calls.meter.add).toBe(8);
    // Every slot's spend, once: 8 × 10 + (0 + … + 7) tokens.
    const tokens = 8 * 10 + 28;
    expect((await jobs.get("rsc_1"))?.spentPolicyTokens).toBe(tokens);
    expect((await meter.get("k-a")).policyTokens).toBe(tokens);
    expect(await inner.held("k-a", clock.now())).toBe(0);
  });

  it("a redelivered batch is all duplicates: nothing run, stored or metered again", async () => {
    const { handler, calls, meter } = await setup();
    const messages = Array.from({ length: 8 }, (_, i) =>
      envelope("rollout.requested", `rsc_1:${i}`, body(i), { keyId: "k-a", jobId: "rsc_1" }),
    );
    await handler(makeSqsEvent(messages));
    const metered = (await meter.get("k-a")).policyTokens;
    await handler(makeSqsEvent(messages));
    expect(calls.rollouts.getMany).toBe(2);
    expect(calls.rollouts.put).toBe(8);
    expect((await meter.get("k-a")).policyTokens).toBe(metered);
  });
});
