import { describe, expect, it } from "vitest";
import { ConsumptionMeter } from "@harness-s/adapters/metering";
import { MemoryRescueJobStore, MemoryRolloutStore } from "@harness-s/adapters/stores";
import type { CostUsage } from "@harness-s/core/billing";
import { batchedDispatchStores } from "../../functions/dispatch/batching.ts";

// Issue 54 (bench): slots of one rescue share requests (coalesced spend adds, batched "stored
// already?" reads) across invocations. A shared request is metered to the slot that asked first in
// its own group, which waits for it; run in the context of the very first asker, a later group's
// units land on a slot whose invocation may already be billed, and are lost.
const spend = { policyTokens: 1, policyMs: 1, environmentMs: 1 };
const tick = () => new Promise((r) => setImmediate(r));

/** A store call that records `units` each time it is called and holds the first call until released. */
function firstHeld(consumption: ConsumptionMeter, units: CostUsage) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let calls = 0;
  return {
    calls: () => calls,
    release: () => release(),
    call: async () => {
      consumption.record(units);
      if (++calls === 1) await gate;
    },
  };
}

/**
 * `ask(i)` by two slots, each in its own metering scope, the second while the first's call is held: what each was
 * metered, and their answers.
 */
async function twoSlots<T>(
  consumption: ConsumptionMeter,
  held: { release: () => void },
  ask: (slot: number) => Promise<T>,
) {
  const used: CostUsage[] = [{}, {}];
  const first = consumption.within(used[0]!, () => ask(0));
  await tick();
  const second = consumption.within(used[1]!, () => ask(1));
  await tick();
  held.release();
  return { used, answers: await Promise.all([first, second]) };
}

describe("the dispatch worker's shared store requests", () => {
  it("meter a later group's spend write to a slot of that group, not to the first group's", async () => {
    const consumption = new ConsumptionMeter();
    const held = firstHeld(consumption, { dynamoWriteUnits: 1 });
    const jobs = Object.assign(new MemoryRescueJobStore(), { addSpend: held.call });
    const stores = batchedDispatchStores({ rollouts: new MemoryRolloutStore(), jobs });
    const { used } = await twoSlots(consumption, held, () => stores.jobs!.addSpend("rsc_1", spend));
    expect(held.calls()).toBe(2);
    expect(used.map((u) => u.dynamoWriteUnits)).toEqual([1, 1]);
  });

  it("meter a later group's 'stored already?' read to a slot of that group", async () => {
    const consumption = new ConsumptionMeter();
    const held = firstHeld(consumption, { dynamoReadUnits: 1 });
    const rollouts = Object.assign(new MemoryRolloutStore(), { getMany: async () => (await held.call(), new Map()) });
    const stores = batchedDispatchStores({ rollouts });
    const { used, answers } = await twoSlots(consumption, held, (slot) => stores.rollouts.has("rsc_1", slot));
    expect(answers).toEqual([false, false]);
    expect(used.map((u) => u.dynamoReadUnits)).toEqual([1, 1]);
  });
});
