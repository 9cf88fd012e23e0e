import { describe, expect, it } from "vitest";
import { ConsumptionMeter, MemoryRescueJobStore, MemoryRolloutStore } from "@harness-s/adapters";
import type { CostUsage } from "@harness-s/core/billing";
import { batchedDispatchStores } from "../../functions/dispatch/batching.ts";

// Issue 54 (bench): slots of one rescue share requests (coalesced spend adds, batched "stored
// already?" reads) across invocations. A shared request is metered to the slot that asked first in
// its own group, which waits for it; run in the context of the very first asker, a later group's
// units land on a slot whose invocation may already be billed, and are lost.
const spend = { policyTokens: 1, policyMs: 1, environmentMs: 1 };
const tick = () => new Promise((r) => setImmediate(r));

describe("the dispatch worker's shared store requests", () => {
  it("meter a later group's spend write to a slot of that group, not to the first group's", async () => {
    const consumption = new ConsumptionMeter();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let writes = 0;
    const jobs = Object.assign(new MemoryRescueJobStore(), {
      addSpend: async () => {
        consumption.record({ dynamoWriteUnits: 1 });
        if (++writes === 1) await gate;
      },
    });
    const stores = batchedDispatchStores({ rollouts: new MemoryRolloutStore(), jobs });
    const a: CostUsage = {};
    const b: CostUsage = {};
    const first = consumption.within(a, () => stores.jobs!.addSpend("rsc_1", spend));
    await tick();
    const second = consumption.within(b, () => stores.jobs!.addSpend("rsc_1", spend));
    await tick();
    release();
    await Promise.all([first, second]);
    expect(writes).toBe(2);
    expect([a.dynamoWriteUnits, b.dynamoWriteUnits]).toEqual([1, 1]);
  });

  it("meter a later group's 'stored already?' read to a slot of that group", async () => {
    const consumption = new ConsumptionMeter();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reads = 0;
    const rollouts = Object.assign(new MemoryRolloutStore(), {
      getMany: async () => {
        consumption.record({ dynamoReadUnits: 1 });
        if (++reads === 1) await gate;
        return new Map();
      },
    });
    const stores = batchedDispatchStores({ rollouts });
    const a: CostUsage = {};
    const b: CostUsage = {};
    const first = consumption.within(a, () => stores.rollouts.has("rsc_1", 0));
    await tick();
    const second = consumption.within(b, () => stores.rollouts.has("rsc_1", 1));
    await tick();
    release();
    expect(await Promise.all([first, second])).toEqual([false, false]);
    expect([a.dynamoReadUnits, b.dynamoReadUnits]).toEqual([1, 1]);
  });
});
