import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "@harness-s/core";
import { LocalRescueProgress, RESCUE_WAIT, tellingStores, waitForRescue, type RescueJob } from "@harness-s/core/rescue";
import { MemoryRescueJobStore, MemoryRescueSlots, MemoryRolloutStore } from "@harness-s/adapters/stores";
import { makeRollout } from "../factories.ts";

// Issue 54 (bench): a status read's long poll backs off (RESCUE_WAIT.looks) so a long wait costs
// about a hundred looks, sees a change within its first bound, and where the dispatch workers
// share its process (serve) is woken by the rollout's store instead of looking, and looks only
// once what it was told answers its `seen`.
const job: RescueJob = {
  id: "rsc_1",
  poolId: "p",
  taskId: "t",
  decisionId: "d",
  chosen: ["h0"],
  rolloutsPerHarness: 3,
  expected: 3,
  createdAt: 0,
};

/** A clock whose sleeps pass at once in virtual time (an aborted one passes none). */
function virtualClock(): Clock {
  let time = 0;
  return {
    now: () => time,
    sleep: async (ms, signal) => {
      if (!signal?.aborted) time += ms;
    },
  };
}

/** Stores whose rollouts appear at the virtual times given, counting each read. */
async function timedStores(clock: Clock, storedAt: readonly number[]) {
  const jobs = new MemoryRescueJobStore();
  await jobs.create(job);
  const reads = { summaries: 0, jobs: 0 };
  const memory = new MemoryRolloutStore();
  const rollouts = {
    ...memory,
    summaries: async (id: string) => {
      reads.summaries++;
      return storedAt.flatMap((at, index) =>
        clock.now() >= at ? [{ index, harnessId: "h0", reward: 0, success: false, failureTags: [], steps: 1 }] : [],
      );
    },
  } as unknown as MemoryRolloutStore;
  const countedJobs = Object.assign(Object.create(jobs), {
    get: (id: string) => (reads.jobs++, jobs.get(id)),
  }) as MemoryRescueJobStore;
  return { deps: { jobs: countedJobs, rollouts, clock }, reads };
}

/**
 * The order of a waiting read's record reads and its release of the rescue's slots: the first
 * record read answers at once; a later one waits (a bounded while) until the slots are given back,
 * so a release started beside that read comes before it, and one started after it comes last.
 */
function releaseOrder(jobs: MemoryRescueJobStore) {
  const order: string[] = [];
  let recordReads = 0;
  const gatedJobs = Object.assign(Object.create(jobs), {
    get: async (id: string) => {
      if (++recordReads > 1)
        for (let i = 0; i < 50 && !order.includes("release"); i++) await new Promise((r) => setImmediate(r));
      order.push("record");
      return jobs.get(id);
    },
  }) as MemoryRescueJobStore;
  const rescueSlots = new MemoryRescueSlots();
  const release = rescueSlots.release.bind(rescueSlots);
  rescueSlots.release = async (keyId: string, id: string) => (order.push("release"), release(keyId, id));
  return { order, gatedJobs, rescueSlots };
}

describe("a rescue status read's long poll", () => {
  it("backs off: a 20 s wait with nothing stored costs about a hundred looks, not 800", async () => {
    const clock = virtualClock();
    const { deps, reads } = await timedStores(clock, [Infinity]);
    const status = await waitForRescue("rsc_1", { seen: 0, wait: 20 }, deps);
    expect(status.status).toBe("running");
    expect(clock.now()).toBe(20_000);
    const looks = reads.summaries;
    expect(looks).toBeLessThanOrEqual(20_000 / RESCUE_WAIT.looks.maxMs + 10);
    // Each look one small read, and the record every `recordMs`: about what a look every 200 ms of two reads cost
    // before 5a2c2c1.
    expect(reads.summaries + reads.jobs).toBeLessThanOrEqual(2 * (20_000 / RESCUE_WAIT.looks.maxMs) + 20);
  });

  it("sees a rollout within its first bound, and looks fast again after a change", async () => {
    const clock = virtualClock();
    const first = await timedStores(clock, [10, Infinity, Infinity]);
    await waitForRescue("rsc_1", { seen: 0, wait: 20 }, first.deps);
    expect(clock.now()).toBeLessThanOrEqual(RESCUE_WAIT.looks.firstMs);
    // After 5 s of waiting the looks are maxMs apart; the first of two seen resets them, so the second is seen within
    // firstMs of its store.
    const late = virtualClock();
    const seenAt: number[] = [];
    const lateStores = await timedStores(late, [5_000, Infinity, Infinity]);
    const summaries = lateStores.deps.rollouts.summaries.bind(lateStores.deps.rollouts);
    let second = Infinity;
    lateStores.deps.rollouts.summaries = async (id: string) => {
      const out = await summaries(id);
      if (out.length === 1 && second === Infinity) {
        second = late.now() + 10;
        seenAt.push(late.now());
      }
      return late.now() >= second
        ? [...out, { index: 1, harnessId: "h0", reward: 1, success: true, failureTags: [], steps: 1 }]
        : out;
    };
    const status = await waitForRescue("rsc_1", { seen: 1, wait: 20 }, lateStores.deps);
    expect(status.completed).toBe(2);
    expect(seenAt[0]).toBeLessThanOrEqual(5_000 + RESCUE_WAIT.looks.maxMs);
    expect(late.now() - second).toBeLessThanOrEqual(RESCUE_WAIT.looks.firstMs);
  });

  it("is woken by the store where the workers share its process: answered within a few ms, not at its next look", async () => {
    const progress = new LocalRescueProgress();
    const jobs = new MemoryRescueJobStore();
    await jobs.create(job);
    const rollouts = new MemoryRolloutStore();
    const told = tellingStores(rollouts, (id, index) => progress.stored(id, index));
    const deps = { jobs, rollouts, clock: systemClock, progress };
    const lags: number[] = [];
    for (const index of [0, 1, 2]) {
      const answered = waitForRescue("rsc_1", { seen: index, wait: 5 }, deps).then(() => performance.now());
      await new Promise((r) => setTimeout(r, 400)); // the looks are 126 to 200 ms apart by now
      const storedAt = performance.now();
      await told.put("rsc_1", index, makeRollout({ harnessId: "h0" }));
      lags.push((await answered) - storedAt);
    }
    expect(Math.max(...lags)).toBeLessThan(25);
  });

  it("gives a finished rescue's slots back to its key beside its record's read, not after it", async () => {
    const clock = virtualClock();
    const jobs = new MemoryRescueJobStore();
    await jobs.create({ ...job, keyId: "k-a" });
    const summaries = [0, 1, 2].map((index) => ({
      index,
      harnessId: "h0",
      reward: 0,
      success: false,
      failureTags: [],
      steps: 1,
    }));
    let looks = 0;
    const rollouts = { summaries: async () => (++looks > 1 ? summaries : []) } as unknown as MemoryRolloutStore;
    const { order, gatedJobs, rescueSlots } = releaseOrder(jobs);
    const status = await waitForRescue(
      "rsc_1",
      { seen: 0, wait: 5 },
      { jobs: gatedJobs, rollouts, clock, rescueSlots },
    );
    expect(status.status).toBe("done");
    expect(order).toEqual(["record", "release", "record"]);
  });

  it("told each store (serve), looks once what it was told answers `seen`: two looks for a rescue of 8, not one per store", async () => {
    const progress = new LocalRescueProgress();
    const jobs = new MemoryRescueJobStore();
    await jobs.create({ ...job, expected: 8, rolloutsPerHarness: 8, keyId: "k-a" });
    const memory = new MemoryRolloutStore();
    const reads = { summaries: 0, jobs: 0 };
    const rollouts = Object.assign(Object.create(memory), {
      summaries: (id: string) => (reads.summaries++, memory.summaries(id)),
    }) as MemoryRolloutStore;
    const countedJobs = Object.assign(Object.create(jobs), {
      get: (id: string) => (reads.jobs++, jobs.get(id)),
    }) as MemoryRescueJobStore;
    const told = tellingStores(memory, (id, index) => progress.stored(id, index));
    const answered = waitForRescue(
      "rsc_1",
      { seen: 7, wait: 5 },
      { jobs: countedJobs, rollouts, clock: systemClock, progress, rescueSlots: new MemoryRescueSlots() },
    ).then((s) => ({ s, at: performance.now() }));
    await new Promise((r) => setTimeout(r, 20));
    let lastStoredAt = 0;
    for (const index of [0, 1, 2, 3, 4, 5, 6, 7]) {
      await new Promise((r) => setTimeout(r, 5)); // all well inside one heardLooksMs
      await told.put("rsc_1", index, makeRollout({ harnessId: "h0" }));
      lastStoredAt = performance.now();
    }
    const { s, at } = await answered;
    expect(s.status).toBe("done");
    expect(s.completed).toBe(8);
    expect(at - lastStoredAt).toBeLessThan(25);
    expect(reads).toEqual({ summaries: 2, jobs: 2 });
  });

  it("told every slot stored, gives the slots back beside the record's and summaries' reads", async () => {
    const progress = new LocalRescueProgress();
    const jobs = new MemoryRescueJobStore();
    await jobs.create({ ...job, keyId: "k-a" });
    const memory = new MemoryRolloutStore();
    const { order, gatedJobs, rescueSlots } = releaseOrder(jobs);
    const told = tellingStores(memory, (id, index) => progress.stored(id, index));
    const answered = waitForRescue(
      "rsc_1",
      { seen: 2, wait: 5 },
      { jobs: gatedJobs, rollouts: memory, clock: systemClock, progress, rescueSlots },
    );
    await new Promise((r) => setTimeout(r, 20));
    for (const index of [0, 1, 2]) await told.put("rsc_1", index, makeRollout({ harnessId: "h0" }));
    expect((await answered).status).toBe("done");
    expect(order).toEqual(["record", "release", "record"]);
  });
});
