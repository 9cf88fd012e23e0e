import { ValidationError, systemClock, type Clock } from "@harness-s/core";
import {
  zeroUsage,
  USAGE_LIMITS,
  byKeyAndDay,
  dayOf,
  jobUsageKey,
  type UsageDay,
  type UsageQuery,
  type Usage,
  type UsageMeter,
  type MeterOptions,
} from "@harness-s/core/billing";

export class MemoryUsageMeter implements UsageMeter {
  private readonly totals = new Map<string, Usage>();
  private readonly days = new Map<string, UsageDay>();
  private readonly metered = new Set<string>();

  constructor(private readonly clock: Clock = systemClock) {}

  async add(keyId: string, usage: Partial<Usage>, opts: MeterOptions = {}): Promise<void> {
    if (opts.once !== undefined) {
      if (this.metered.has(opts.once)) return;
      this.metered.add(opts.once);
    }
    const plus = (t: Usage) => {
      for (const k of Object.keys(zeroUsage) as (keyof Usage)[]) t[k] += usage[k] ?? 0;
      return t;
    };
    this.totals.set(keyId, plus({ ...(this.totals.get(keyId) ?? zeroUsage) }));
    if (opts.jobId)
      this.totals.set(jobUsageKey(opts.jobId), plus({ ...(this.totals.get(jobUsageKey(opts.jobId)) ?? zeroUsage) }));
    const day = dayOf(this.clock.now());
    const row = this.days.get(`${keyId}\n${day}`) ?? { keyId, day, usage: { ...zeroUsage } };
    this.days.set(`${keyId}\n${day}`, { ...row, usage: plus({ ...row.usage }) });
  }

  async get(keyId: string): Promise<Usage> {
    return { ...(this.totals.get(keyId) ?? zeroUsage) };
  }

  job(jobId: string): Promise<Usage> {
    return this.get(jobUsageKey(jobId));
  }

  async byDay(q: UsageQuery): Promise<UsageDay[]> {
    const rows = [...this.days.values()].filter(
      (r) => (q.keyId === undefined || r.keyId === q.keyId) && r.day >= q.from && r.day <= q.to,
    );
    if (rows.length > USAGE_LIMITS.maxRows)
      throw new ValidationError("read usage by day", [
        `more than ${USAGE_LIMITS.maxRows} items: ask for less (a shorter period)`,
      ]);
    return rows.sort(byKeyAndDay).map((r) => ({ ...r, usage: { ...r.usage } }));
  }

  private readonly slots = new Map<string, number>();

  async addWithin(keyId: string, field: keyof Usage, amount: number, limit: number): Promise<boolean> {
    const t = { ...(this.totals.get(keyId) ?? zeroUsage) };
    if (t[field] + amount > limit) return false;
    t[field] += amount;
    this.totals.set(keyId, t);
    return true;
  }

  async acquireSlot(keyId: string, limit: number): Promise<boolean> {
    const held = this.slots.get(keyId) ?? 0;
    if (held >= limit) return false;
    this.slots.set(keyId, held + 1);
    return true;
  }

  async releaseSlot(keyId: string): Promise<void> {
    this.slots.set(keyId, Math.max(0, (this.slots.get(keyId) ?? 0) - 1));
  }

  async slotsHeld(keyId: string): Promise<number> {
    return this.slots.get(keyId) ?? 0;
  }
}
