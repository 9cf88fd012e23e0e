import { describe, expect, it } from "vitest";
import { ManualClock } from "@harness-s/core";
import type { RescueSlots } from "@harness-s/core/dispatch";
import { FULL_MEMO_MS, FullSlotsMemo, MemoryRescueSlots } from "@harness-s/adapters/stores";

// Issue 52, item 4: a key at its cap of running rollouts has its waiting rollouts come back in
// waves; each is deferred again without a store read while the key was just found full, and the
// ones that arrive while a read is in flight learn its answer instead of each reading.
function counted(inner: RescueSlots) {
  const calls = { hold: 0 };
  const slots: RescueSlots = {
    hold: async (...args) => {
      calls.hold++;
      await new Promise((r) => setTimeout(r, 5));
      return inner.hold(...args);
    },
    release: (k, id) => inner.release(k, id),
    held: (k, now) => inner.held(k, now),
  };
  return { slots, calls };
}

describe("a key's running places, a full key remembered", () => {
  it("answers a wave of holds on a full key with one store read, and frees a place at once on release", async () => {
    const clock = new ManualClock(1_000);
    const { slots, calls } = counted(new MemoryRescueSlots());
    const memo = new FullSlotsMemo(slots, clock);
    const hold = (id: string) => memo.hold("k", id, 1, 2, clock.now(), clock.now() + 60_000);
    expect([await hold("a"), await hold("b")]).toEqual([true, true]);
    calls.hold = 0;
    const wave = await Promise.all(Array.from({ length: 50 }, (_, i) => hold(`w${i}`)));
    expect(wave.every((h) => !h)).toBe(true);
    expect(calls.hold).toBe(1);
    // Within the memo's time: no read at all.
    expect(await hold("x")).toBe(false);
    expect(calls.hold).toBe(1);
    // A place freed here is seen at once.
    await memo.release("k", "a");
    expect(await hold("y")).toBe(true);
    expect(calls.hold).toBe(2);
    // Full again; after the memo's time the store is asked again.
    expect(await hold("z")).toBe(false);
    clock.advance(FULL_MEMO_MS + 1);
    expect(await hold("z")).toBe(false);
    expect(calls.hold).toBe(4);
    // Another key is not held back by this one's memo.
    expect(await memo.hold("other", "o", 1, 2, clock.now(), clock.now() + 60_000)).toBe(true);
  });
});

// Issue 54 (the rescue bench): a batch of one rescue's slots asks for its key's running places in
// the same turn; a store that takes several holds at once gets them in one call (one write), not
// the first alone and the rest after it.
describe("a key's running places asked by a batch at once", () => {
  it("sends a turn's holds in one holdMany, answered in order, and a later wave on the full key learns it from the one in flight", async () => {
    const clock = new ManualClock(1_000);
    const inner = new MemoryRescueSlots();
    const many: number[] = [];
    const slots: RescueSlots = {
      hold: () => Promise.reject(new Error("asked one at a time")),
      holdMany: async (k, holds) => {
        many.push(holds.length);
        await new Promise((r) => setTimeout(r, 5));
        const out: boolean[] = [];
        for (const h of holds) out.push(await inner.hold(k, h.id, h.slots, h.limit, h.now, h.until));
        return out;
      },
      release: (k, id) => inner.release(k, id),
      held: (k, now) => inner.held(k, now),
    };
    const memo = new FullSlotsMemo(slots, clock);
    const hold = (id: string) => memo.hold("k", id, 1, 6, clock.now(), clock.now() + 60_000);
    const batch = await Promise.all(Array.from({ length: 8 }, (_, i) => hold(`s${i}`)));
    expect(batch).toEqual([true, true, true, true, true, true, false, false]);
    expect(many).toEqual([8]);
    clock.advance(FULL_MEMO_MS + 1);
    await memo.release("k", "s0");
    const wave = await Promise.all(Array.from({ length: 20 }, (_, i) => hold(`w${i}`)));
    expect(wave.filter(Boolean)).toHaveLength(1);
    expect(many).toEqual([8, 20]);
  });
});
