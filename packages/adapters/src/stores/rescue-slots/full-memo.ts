import type { Clock } from "@harness-s/core";
import type { RescueSlots } from "@harness-s/core/rescue";

/** How long a key found with every running place taken is answered "full" without asking the store again. */
export const FULL_MEMO_MS = 500;

/**
 * A key's places (`RescueSlots`) where a key just found full is answered full again for
 * {@link FULL_MEMO_MS} without a store read: a key's waiting rollouts come back in waves (a
 * hundred at once), and each costs a deferral, not a read. A place this process frees forgets the
 * memo at once; one freed elsewhere is seen within the memo's time (a rollout waits one more turn).
 *
 * @example
 * const running = new FullSlotsMemo(new DynamoRescueSlots(doc, tables, "runningHolds"), systemClock);
 */
export class FullSlotsMemo implements RescueSlots {
  private readonly fullUntil = new Map<string, number>();
  /** A key's hold in flight: the ones that arrive meanwhile learn "full" from it instead of each reading the store. */
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(
    private readonly inner: RescueSlots,
    private readonly clock: Clock,
    private readonly maxKeys = 1_024,
  ) {}

  async hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    if ((this.fullUntil.get(keyId) ?? 0) > this.clock.now()) return false;
    const before = this.asking.get(keyId);
    if (before && !(await before.catch(() => true))) return false;
    const asked = this.inner.hold(keyId, id, slots, limit, now, until);
    this.asking.set(keyId, asked);
    const held = await asked.finally(() => {
      if (this.asking.get(keyId) === asked) this.asking.delete(keyId);
    });
    this.fullUntil.delete(keyId);
    if (!held) {
      this.fullUntil.set(keyId, this.clock.now() + FULL_MEMO_MS);
      if (this.fullUntil.size > this.maxKeys) this.fullUntil.delete(this.fullUntil.keys().next().value!);
    }
    return held;
  }

  async release(keyId: string, id: string): Promise<void> {
    this.fullUntil.delete(keyId);
    await this.inner.release(keyId, id);
  }

  held(keyId: string, now: number): Promise<number> {
    return this.inner.held(keyId, now);
  }
}
