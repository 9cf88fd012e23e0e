import { describe, expect, it } from "vitest";
import type { RescueSlots } from "@harness-s/core/dispatch";

/** What every RescueSlots must do; `fresh` returns an empty store. */
export function rescueSlotsContract(name: string, fresh: () => Promise<{ rescueSlots: RescueSlots }>): void {
  describe(`RescueSlots contract: ${name}`, () => {
    it("rescue slots: holds count until released or expired, and concurrent holds never take a key past its limit", async () => {
      const s = await fresh();
      expect(await s.rescueSlots.hold("k1", "r1", 60, 100, 0, 1_000)).toBe(true);
      expect(await s.rescueSlots.hold("k1", "r2", 50, 100, 10, 1_000)).toBe(false);
      expect(await s.rescueSlots.hold("k2", "r2", 50, 100, 10, 1_000)).toBe(true); // another key's own
      expect(await s.rescueSlots.held("k1", 10)).toBe(60);
      await s.rescueSlots.release("k1", "r1");
      await s.rescueSlots.release("k1", "never-held");
      expect(await s.rescueSlots.hold("k1", "r2", 50, 100, 20, 500)).toBe(true);
      // r2's hold expires at 500: at 600 it no longer counts.
      expect(await s.rescueSlots.hold("k1", "r3", 100, 100, 600, 2_000)).toBe(true);
      expect(await s.rescueSlots.held("k1", 600)).toBe(100);
      const taken = await Promise.all(
        Array.from({ length: 6 }, (_, i) => s.rescueSlots.hold("k3", `c${i}`, 30, 100, 0, 1_000)),
      );
      expect(taken.filter(Boolean)).toHaveLength(3);
      expect(await s.rescueSlots.held("k3", 0)).toBe(90);
    });
  });
}
