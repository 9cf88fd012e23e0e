import type { RescueSlots } from "@harness-s/core/dispatch";

export class MemoryRescueSlots implements RescueSlots {
  private readonly holds = new Map<string, Map<string, { slots: number; until: number }>>();

  async hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    const mine = this.holds.get(keyId) ?? new Map<string, { slots: number; until: number }>();
    for (const [k, h] of mine) if (h.until <= now || k === id) mine.delete(k);
    const held = [...mine.values()].reduce((n, h) => n + h.slots, 0);
    if (held + slots > limit) return false;
    mine.set(id, { slots, until });
    this.holds.set(keyId, mine);
    return true;
  }

  async release(keyId: string, id: string): Promise<void> {
    this.holds.get(keyId)?.delete(id);
  }

  async held(keyId: string, now: number): Promise<number> {
    return [...(this.holds.get(keyId)?.values() ?? [])].filter((h) => h.until > now).reduce((n, h) => n + h.slots, 0);
  }
}
