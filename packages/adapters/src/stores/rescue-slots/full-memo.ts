import type { Clock } from "@harness-s/core";
import type { HoldRequest, RescueSlots } from "@harness-s/core/dispatch";

/** How long a key found with every running place taken is answered "full" without asking the store again. */
export const FULL_MEMO_MS = 500;

/**
 * A key's places (`RescueSlots`) where a key just found full is answered full again for
 * {@link FULL_MEMO_MS} without a store read: a key's waiting rollouts come back in waves (a
 * hundred at once), and each costs a deferral, not a read. A place this process frees forgets the
 * memo at once; one freed elsewhere is seen within the memo's time (a rollout waits one more turn).
 *
 * @example
 * const running = new FullSlotsMemo(new DynamoRunningPlaces(doc, tables), systemClock);
 */
export class FullSlotsMemo implements RescueSlots {
  private readonly fullUntil = new Map<string, number>();
  /** A key's hold in flight: the ones that arrive meanwhile learn "full" from it instead of each reading the store. */
  private readonly asking = new Map<string, Promise<boolean>>();
  /** A key's holds of this turn, not sent yet: a hold asked now joins them. */
  private readonly gathering = new Map<string, { add: (hold: HoldRequest) => Promise<boolean> }>();

  constructor(
    private readonly inner: RescueSlots,
    private readonly clock: Clock,
    private readonly maxKeys = 1_024,
  ) {}

  async hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    if ((this.fullUntil.get(keyId) ?? 0) > this.clock.now()) return false;
    const wanted: HoldRequest = { id, slots, limit, now, until };
    // Holds asked in the same turn as one not yet sent (a batch's slots) are sent with it.
    const gathering = this.gathering.get(keyId);
    if (gathering) return this.answered(keyId, gathering.add(wanted));
    const before = this.asking.get(keyId);
    if (before && !(await before.catch(() => true))) return false;
    if (!this.inner.holdMany)
      return this.answered(keyId, this.track(keyId, this.inner.hold(keyId, id, slots, limit, now, until)));
    return this.answered(keyId, this.gather(keyId, wanted));
  }

  /**
   * The first hold of a turn, where the store takes several at once: sent after the turn in one
   * `holdMany` with the ones asked meanwhile. Holds that arrive while it is in flight learn "full"
   * from it instead of each asking.
   */
  private gather(keyId: string, first: HoldRequest): Promise<boolean> {
    const asked: HoldRequest[] = [first];
    const sent = new Promise<boolean[]>((resolve, reject) =>
      setImmediate(() => {
        this.gathering.delete(keyId);
        this.inner.holdMany!(keyId, asked).then(resolve, reject);
      }),
    );
    this.gathering.set(keyId, {
      add: (h) => {
        const i = asked.push(h) - 1;
        return sent.then((held) => held[i]!);
      },
    });
    this.track(
      keyId,
      sent.then((held) => held.some(Boolean)),
    );
    return sent.then((held) => held[0]!);
  }

  /** A hold in flight for the key: the ones that arrive meanwhile wait for it and learn "full" from it. */
  private track(keyId: string, asked: Promise<boolean>): Promise<boolean> {
    this.asking.set(keyId, asked);
    void asked
      .finally(() => {
        if (this.asking.get(keyId) === asked) this.asking.delete(keyId);
      })
      .catch(() => undefined);
    return asked;
  }

  /** A hold's answer: a key found full is remembered for {@link FULL_MEMO_MS}; one held forgets it. */
  private async answered(keyId: string, asked: Promise<boolean>): Promise<boolean> {
    const held = await asked;
    this.fullUntil.delete(keyId);
    if (!held) {
      this.fullUntil.set(keyId, this.clock.now() + FULL_MEMO_MS);
      if (this.fullUntil.size > this.maxKeys) this.fullUntil.delete(this.fullUntil.keys().next().value!);
    }
    return held;
  }

  /** A running hold's renewal: past the memo, whatever the key's limit (its own place is counted already). */
  renew(keyId: string, id: string, now: number, until: number): Promise<unknown> {
    return this.inner.renew
      ? this.inner.renew(keyId, id, now, until)
      : this.inner.hold(keyId, id, 1, Number.MAX_SAFE_INTEGER, now, until);
  }

  async release(keyId: string, id: string): Promise<void> {
    this.fullUntil.delete(keyId);
    await this.inner.release(keyId, id);
  }

  held(keyId: string, now: number): Promise<number> {
    return this.inner.held(keyId, now);
  }
}
