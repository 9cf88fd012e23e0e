import { ConflictError, HarnessPool, parseOrThrow, ValidationError, formatIssues, systemClock, type Clock, type Rollout, type RolloutStore, type PoolStore } from "@harness-s/core";
import { Envelope as EnvelopeSchema, type Envelope, type MessageQueue } from "@harness-s/core/messaging";
import { emptyProfile, type ProfileLedger, type Profile, type ProfileSet, type ProfileStore } from "@harness-s/core/profile";
import { zeroUsage, USAGE_LIMITS, byKeyAndDay, dayOf, jobUsageKey, type UsageDay, type UsageQuery, type Usage, type UsageMeter } from "@harness-s/core/billing";
import { type RescueSlots, type RolloutSpend, SlotFailure, type RescueJob, type RescueJobStore } from "@harness-s/core/rescue";
import type { ApiKeyRecord, ApiKeyStore } from "@harness-s/core/access";
import type { DecisionStore } from "@harness-s/core/routing";
import type { RoutingDecision, Ballot, BallotStore } from "@harness-s/core/voting";
import { type ExperimentRecord, type ExperimentStore, selectSteps, type ExperimentStep, type ExperimentStepStore } from "@harness-s/core/experiment";

/** A deep copy frozen all the way down: stored once, shared on every read, mutation throws. */
function frozenCopy<T>(value: T): T {
  const copy = structuredClone(value);
  const freeze = (v: unknown) => {
    if (v && typeof v === "object" && !Object.isFrozen(v)) {
      Object.freeze(v);
      for (const child of Object.values(v)) freeze(child);
    }
  };
  freeze(copy);
  return copy;
}

/** In-memory pools, for the embedded default and unit tests; reads share a frozen snapshot. */
export class MemoryPoolStore implements PoolStore {
  private readonly pools = new Map<string, HarnessPool>();

  async put(pool: HarnessPool): Promise<void> {
    parseOrThrow(HarnessPool, pool, "pool"); // as the DynamoDB store: a pool it could not read back is refused
    const existing = this.pools.get(pool.id);
    if (existing && existing.version !== pool.version) throw new ConflictError(`pool ${pool.id} already exists with version ${existing.version}; pools are immutable`);
    this.pools.set(pool.id, frozenCopy(pool));
  }

  async get(id: string): Promise<HarnessPool | undefined> {
    return this.pools.get(id);
  }

  async list() {
    return [...this.pools.values()].map((p) => ({ id: p.id, version: p.version, siblings: p.siblings.length })).sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}

export class MemoryProfileStore implements ProfileStore, ProfileLedger {
  private readonly byPool = new Map<string, ProfileSet>();
  private readonly processed = new Set<string>();

  async applyOnce(messageId: string, poolId: string, harnessId: string, update: (current: Profile) => Profile): Promise<"applied" | "duplicate"> {
    if (this.processed.has(messageId)) return "duplicate";
    const set = this.byPool.get(poolId) ?? {};
    const next = update(structuredClone(set[harnessId] ?? emptyProfile(harnessId, 0)));
    set[harnessId] = frozenCopy(next);
    this.byPool.set(poolId, set);
    this.processed.add(messageId);
    return "applied";
  }

  async get(poolId: string): Promise<ProfileSet> {
    return { ...(this.byPool.get(poolId) ?? {}) };
  }

  async put(poolId: string, profile: Profile): Promise<void> {
    const set = this.byPool.get(poolId) ?? {};
    set[profile.harnessId] = frozenCopy(profile);
    this.byPool.set(poolId, set);
  }
}

export class MemoryDecisionStore implements DecisionStore {
  // Writing a decision is the hot path (every route), reading one back is rare: the record is kept
  // as given (the router never changes a decision it has stored) and copied when read.
  private readonly decisions = new Map<string, RoutingDecision>();

  async put(decision: RoutingDecision): Promise<void> {
    if (!this.decisions.has(decision.id)) this.decisions.set(decision.id, decision);
  }

  async get(id: string): Promise<RoutingDecision | undefined> {
    const d = this.decisions.get(id);
    return d && structuredClone(d);
  }
}

export class MemoryApiKeyStore implements ApiKeyStore {
  private readonly byHash = new Map<string, ApiKeyRecord>();

  async put(key: ApiKeyRecord): Promise<void> {
    this.byHash.set(key.hash, { ...key });
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const k = this.byHash.get(hash);
    return k && { ...k };
  }
}

export class MemoryUsageMeter implements UsageMeter {
  private readonly totals = new Map<string, Usage>();
  private readonly days = new Map<string, UsageDay>();

  constructor(private readonly clock: Clock = systemClock) {}

  async add(keyId: string, usage: Partial<Usage>, opts: { jobId?: string } = {}): Promise<void> {
    const plus = (t: Usage) => {
      for (const k of Object.keys(zeroUsage) as (keyof Usage)[]) t[k] += usage[k] ?? 0;
      return t;
    };
    this.totals.set(keyId, plus({ ...(this.totals.get(keyId) ?? zeroUsage) }));
    if (opts.jobId) this.totals.set(jobUsageKey(opts.jobId), plus({ ...(this.totals.get(jobUsageKey(opts.jobId)) ?? zeroUsage) }));
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
    const rows = [...this.days.values()].filter((r) => (q.keyId === undefined || r.keyId === q.keyId) && r.day >= q.from && r.day <= q.to);
    if (rows.length > USAGE_LIMITS.maxRows) throw new ValidationError("read usage by day", [`more than ${USAGE_LIMITS.maxRows} items: ask for less (a shorter period)`]);
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

/** Collects sent envelopes; `take` hands them to a consumer (tests, the embedded default). */
export class MemoryQueue implements MessageQueue {
  private readonly pending: Envelope[] = [];

  /** Delays asked for with each send, in order (memory delivers nothing by itself: `take` is the worker). */
  readonly delays: number[] = [];

  /** Validates like the SQS adapter: one invalid envelope refuses the whole call. */
  async send(messages: Envelope[], opts: { delaySeconds?: number } = {}): Promise<void> {
    if (opts.delaySeconds !== undefined) this.delays.push(opts.delaySeconds);
    const parsed = messages.map((m) => EnvelopeSchema.safeParse(m));
    const bad = parsed.find((p) => !p.success);
    if (bad && !bad.success) throw new ValidationError("queue message", formatIssues(bad.error.issues));
    this.pending.push(...parsed.map((p) => p.data!));
  }

  take(): Envelope[] {
    return this.pending.splice(0, this.pending.length);
  }
}

export class MemoryRolloutStore implements RolloutStore {
  private readonly jobs = new Map<string, Map<number, Rollout>>();

  async put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate"> {
    const job = this.jobs.get(jobId) ?? new Map<number, Rollout>();
    if (job.has(index)) return "duplicate";
    job.set(index, frozenCopy(rollout));
    this.jobs.set(jobId, job);
    return "stored";
  }

  async has(jobId: string, index: number): Promise<boolean> {
    return this.jobs.get(jobId)?.has(index) ?? false;
  }

  async get(jobId: string, index: number): Promise<Rollout | undefined> {
    return this.jobs.get(jobId)?.get(index);
  }

  async getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>> {
    const job = this.jobs.get(jobId);
    return new Map(indexes.flatMap((i) => (job?.has(i) ? [[i, job.get(i)!] as const] : [])));
  }

  async list(jobId: string) {
    return [...(this.jobs.get(jobId) ?? new Map<number, Rollout>()).entries()].sort((a, b) => a[0] - b[0]).map(([index, rollout]) => ({ index, rollout }));
  }
}

export class MemoryRescueJobStore implements RescueJobStore {
  private readonly jobs = new Map<string, RescueJob>();

  async create(job: RescueJob): Promise<void> {
    if (this.jobs.has(job.id)) throw new ConflictError(`rescue ${job.id} exists`);
    this.jobs.set(job.id, frozenCopy(job));
  }

  async get(id: string): Promise<RescueJob | undefined> {
    return this.jobs.get(id);
  }

  async recordFailure(id: string, index: number, failure: SlotFailure): Promise<void> {
    const job = this.jobs.get(id);
    if (job) this.jobs.set(id, frozenCopy({ ...job, failures: [...(job.failures ?? []), { index, ...SlotFailure.parse(failure) }] }));
  }

  async cancel(id: string, at: number): Promise<void> {
    const job = this.jobs.get(id);
    if (job && job.cancelledAt === undefined) this.jobs.set(id, frozenCopy({ ...job, cancelledAt: at }));
  }

  async addSpend(id: string, spend: RolloutSpend): Promise<void> {
    const job = this.jobs.get(id);
    if (job)
      this.jobs.set(
        id,
        frozenCopy({
          ...job,
          spentPolicyTokens: (job.spentPolicyTokens ?? 0) + spend.policyTokens,
          spentPolicyMs: (job.spentPolicyMs ?? 0) + spend.policyMs,
          spentEnvironmentMs: (job.spentEnvironmentMs ?? 0) + spend.environmentMs,
        }),
      );
  }
}

export class MemoryBallotStore implements BallotStore {
  private readonly ballots = new Map<string, Ballot>();

  async put(ballotKey: string, ballot: Ballot): Promise<"stored" | "duplicate"> {
    const key = `${ballotKey}\u0000${ballot.voterId}`;
    if (this.ballots.has(key)) return "duplicate";
    this.ballots.set(key, frozenCopy(ballot));
    return "stored";
  }

  async get(ballotKey: string, voterId: string): Promise<Ballot | undefined> {
    return this.ballots.get(`${ballotKey}\u0000${voterId}`);
  }
}

export class MemoryExperimentStore implements ExperimentStore {
  private readonly runs = new Map<string, ExperimentRecord>();

  async create(record: ExperimentRecord): Promise<void> {
    if (this.runs.has(record.id)) throw new ConflictError(`experiment ${record.id} exists`);
    this.runs.set(record.id, frozenCopy(record));
  }

  private readonly cancels = new Set<string>();

  async get(id: string): Promise<ExperimentRecord | undefined> {
    const r = this.runs.get(id);
    return r && { ...structuredClone(r), ...(this.cancels.has(id) ? { cancelRequested: true } : {}) };
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<ExperimentRecord | undefined> {
    const r = this.runs.get(id);
    if (!r) return undefined;
    const free = r.status === "queued" || (r.status === "running" && (r.leaseUntil ?? 0) < now);
    if (!free) return undefined;
    const claimed = { ...structuredClone(r), status: "running" as const, leaseUntil, updatedAt: now };
    this.runs.set(id, frozenCopy(claimed));
    return this.get(id);
  }

  async save(record: ExperimentRecord): Promise<void> {
    this.runs.set(record.id, frozenCopy(record));
  }

  async requestCancel(id: string, now: number): Promise<ExperimentRecord | undefined> {
    const r = this.runs.get(id);
    if (!r) return undefined;
    if (r.status === "queued") this.runs.set(id, frozenCopy({ ...structuredClone(r), status: "cancelled", updatedAt: now, leaseUntil: undefined }));
    if (r.status === "queued" || r.status === "running") this.cancels.add(id);
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    return this.cancels.has(id);
  }
}

export class MemoryExperimentStepStore implements ExperimentStepStore {
  private readonly steps = new Map<string, ExperimentStep>();

  async put(step: ExperimentStep): Promise<void> {
    const key = `${step.experimentId}\u0000${step.seed}\u0000${step.arm}\u0000${step.step}`;
    if (!this.steps.has(key)) this.steps.set(key, frozenCopy(step));
  }

  async list(experimentId: string, filter: { arm?: string; seed?: number } = {}): Promise<ExperimentStep[]> {
    return selectSteps(
      [...this.steps.values()].filter((s) => s.experimentId === experimentId),
      filter,
    );
  }
}

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
