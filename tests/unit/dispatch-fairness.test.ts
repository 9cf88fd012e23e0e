import { describe, expect, it } from "vitest";
import {
  CALLER_ROLLOUT_FAIRNESS,
  rolloutRunners,
  type CallerPolicies,
  type RolloutRequestedBody,
} from "@harness-s/core/dispatch";
import { MAX_DEFERRALS, envelope, type EnvelopeOf } from "@harness-s/core/messaging";
import { ManualClock } from "@harness-s/core";
import { MemoryQueue, MemoryRescueJobStore, MemoryRescueSlots, MemoryRolloutStore } from "@harness-s/adapters/stores";
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

/** A caller's policies none of these slots may run at. */
const callersFailing: CallerPolicies = {
  checkEnvironment: async () => undefined,
  checkEndpoint: async () => undefined,
  currentVersion: async () => 0,
  datums: async () => [],
  runner: () => Promise.reject(new Error("must not run")),
};

type DispatchHandlerDeps = Parameters<typeof createDispatchHandler>[0];

/** A key at its limit of running places, one rescue of 8 recorded; `adapt` may wrap the handler's deps. */
async function setup(adapt: (deps: DispatchHandlerDeps) => DispatchHandlerDeps = (deps) => deps) {
  const clock = new ManualClock(1_000);
  const running = new MemoryRescueSlots();
  const jobs = new MemoryRescueJobStore();
  const requeue = new MemoryQueue();
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
  // Every one of the key's running places is taken by other slots.
  for (let i = 0; i < CALLER_ROLLOUT_FAIRNESS.perKeyRunning; i++)
    await running.hold(
      "k-a",
      `rsc_1:${100 + i}`,
      1,
      CALLER_ROLLOUT_FAIRNESS.perKeyRunning,
      clock.now(),
      clock.now() + 60_000,
    );
  const handler = createDispatchHandler(
    adapt({
      pools: { get: async () => undefined, put: async () => undefined, list: async () => [] },
      tasks: { get: async () => undefined },
      rollouts: new MemoryRolloutStore(),
      runners: rolloutRunners({ caller: callersFailing }),
      jobs,
      fairness: { slots: running, clock, requeue },
      log: () => undefined,
    }),
  );
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
    expect((await jobs.get("rsc_1"))!.failures).toEqual([
      {
        index: 2,
        code: "CONCURRENCY_LIMIT",
        reason: `waited ${MAX_DEFERRALS} times for one of its key's running places`,
      },
    ]);
  });

  it("runs once a place is free (here: fails at once at the caller's runner, its code recorded)", async () => {
    const { handler, requeue, jobs, running } = await setup();
    await running.release("k-a", "rsc_1:100");
    await handler(makeSqsEvent([message(3, 2)]));
    expect(requeue.take()).toHaveLength(0);
    expect((await jobs.get("rsc_1"))!.failures?.[0]).toMatchObject({ index: 3, code: "NOT_FOUND" });
  });
});

describe("a caller slot's reads", () => {
  /**
   * The fairness set-up, with its key's holds let through only when `open()` is called, and the slot's reads counted.
   */
  async function gated() {
    let open = () => undefined as void;
    const opened = new Promise<void>((r) => (open = r));
    const reads: string[] = [];
    const counted = <T extends object>(store: T, methods: Record<string, string>) =>
      Object.assign(
        Object.create(store) as T,
        Object.fromEntries(
          Object.entries(methods).map(([method, read]) => [
            method,
            (...a: unknown[]) => (
              reads.push(read), (store as Record<string, (...a: unknown[]) => unknown>)[method]!(...a)
            ),
          ]),
        ),
      );
    const base = await setup((deps) => ({
      ...deps,
      pools: counted(deps.pools, { get: "pool" }),
      rollouts: counted(deps.rollouts, { has: "has", getMany: "has" }),
      runners: rolloutRunners({
        caller: { ...callersFailing, runner: () => (reads.push("endpoint"), Promise.reject(new Error("no endpoint"))) },
      }),
      jobs: counted(deps.jobs!, { get: "job" }),
      fairness: {
        ...deps.fairness!,
        slots: Object.assign(Object.create(deps.fairness!.slots) as MemoryRescueSlots, {
          hold: async (...a: Parameters<MemoryRescueSlots["hold"]>) => (await opened, deps.fairness!.slots.hold(...a)),
        }),
      },
    }));
    return { ...base, reads, open };
  }

  it("go out beside its hold, before the hold is answered", async () => {
    const { handler, reads, open, running, jobs } = await gated();
    await running.release("k-a", "rsc_1:100");
    const done = handler(makeSqsEvent([message(4)]));
    await new Promise((r) => setTimeout(r, 20));
    expect(reads.sort()).toEqual(["endpoint", "has", "job", "pool"]);
    open();
    await done;
    expect((await jobs.get("rsc_1"))!.failures?.[0]).toMatchObject({ index: 4 });
  });

  it("wait for its hold once a worker has met its key at the limit, so a slot that waits its turn reads nothing", async () => {
    const { handler, reads, open, requeue, clock } = await gated();
    open();
    await handler(makeSqsEvent([message(5)]));
    expect(requeue.take()).toHaveLength(1);
    reads.length = 0;
    await handler(makeSqsEvent([message(6)]));
    expect(requeue.take()).toHaveLength(1);
    expect(reads).toEqual([]);
    // Past `holdFirstMs` its reads go beside its hold again.
    clock.advance(CALLER_ROLLOUT_FAIRNESS.holdFirstMs);
    await handler(makeSqsEvent([message(7)]));
    expect(reads.length).toBeGreaterThan(0);
  });
});

describe("a malformed rollout.requested (issue 67 item 14)", () => {
  it("fails its slot at once with VALIDATION_FAILED, so its rescue ends, and still goes on to the DLQ", async () => {
    const { handler, jobs } = await setup();
    const bad = { ...message(3), body: { ...body(3), seed: "not a seed" } };
    const event = makeSqsEvent([bad as never]);
    expect((await handler(event)).batchItemFailures).toHaveLength(1);
    const job = await jobs.get("rsc_1");
    expect(job?.failures).toEqual([
      expect.objectContaining({ index: 3, code: "VALIDATION_FAILED", reason: expect.stringContaining("seed") }),
    ]);
  });
});
