import { NotFoundError } from "../errors.ts";
import type { Clock } from "./clock.ts";

/**
 * What every job a worker claims under a lease has: its state, its lease, its key's cancel, its progress and attempts.
 */
export interface LeasedJob {
  id: string;
  status: string;
  leaseUntil?: number | undefined;
  cancelRequested?: boolean | undefined;
  updatedAt: number;
  attempts: number;
  progress: { done: number; total: number; label: string };
}

/**
 * Jobs a worker claims under a lease (experiments, pool evolutions): one store shape for all of
 * them, so claiming, saving and cancelling are written once.
 */
export interface LeasedJobStore<R extends LeasedJob> {
  /** Refuses (ConflictError) an id that exists. */
  create(record: R): Promise<void>;
  get(id: string): Promise<R | undefined>;
  /** Marks the job `running` until `leaseUntil` if it is queued or its lease expired; else undefined. */
  claim(id: string, now: number, leaseUntil: number): Promise<R | undefined>;
  /** Writes the record; never clears a cancel asked meanwhile (`cancelRequested` is the API's to set). */
  save(record: R): Promise<void>;
  /**
   * Its key's cancel: a queued job ends `cancelled` at once; a running one is marked to stop
   * (`cancelRequested`); an ended one is left as it is. The job as it is after, or undefined.
   */
  requestCancel(id: string, now: number): Promise<R | undefined>;
  /** Whether its key asked the job to stop (one small read; the running worker asks as it goes). */
  cancelRequested(id: string): Promise<boolean>;
}

/**
 * Claims job `id` for one attempt, leased until `leaseMs` from now: the job as claimed, or
 * "duplicate" when another worker holds it (a redelivered message while it runs, or one already
 * ended); a job that does not exist is a NotFoundError.
 */
export async function claimJob<R extends LeasedJob>(
  store: LeasedJobStore<R>,
  id: string,
  what: string,
  clock: Clock,
  leaseMs: number,
): Promise<R | "duplicate"> {
  const claimed = await store.claim(id, clock.now(), clock.now() + leaseMs);
  if (claimed) return claimed;
  if (!(await store.get(id))) throw new NotFoundError(what, id);
  return "duplicate";
}

/**
 * The writes of one claimed attempt: each patch applied to the attempt's record now and the whole
 * record written after every earlier write (no stale overwrite), the lease renewed while it runs
 * and let go once it ends; `stamp` sets what a job keeps current at each write (its compute time).
 */
export class LeaseWriter<R extends LeasedJob> {
  private persisted: Promise<void> = Promise.resolve();

  constructor(
    readonly record: R,
    private readonly deps: {
      store: Pick<LeasedJobStore<R>, "save">;
      clock: Clock;
      leaseMs: number;
      snapshot: (record: R) => R;
      stamp?: (record: R, now: number) => void;
    },
  ) {}

  readonly save = (patch: Partial<R>): Promise<void> => {
    const { record, deps } = this;
    const now = deps.clock.now();
    Object.assign(record, patch, { updatedAt: now });
    deps.stamp?.(record, now);
    record.leaseUntil = record.status === "running" ? now + deps.leaseMs : undefined;
    const snapshot = deps.snapshot(record);
    this.persisted = this.persisted.catch(() => undefined).then(() => deps.store.save(snapshot));
    return this.persisted;
  };

  /** Once every write so far has been tried (a failed one is the caller's to have seen). */
  settled(): Promise<void> {
    return this.persisted.catch(() => undefined);
  }
}

/** The longest SQS delays a message (s): a lease further off is looked at again after this. */
const MAX_DELAY_SECONDS = 900;

/**
 * A delivery that found job `id` held by another attempt's unlapsed lease: that attempt may be running, or its process
 * may have died (killed, past its timeout) with the lease left to lapse. `again` sends the job's message delayed until
 * the lease lapses: a live attempt has renewed it by then (looked at again later), a dead one's job is claimed and
 * resumes. A job that ended, or has no lease, is left alone (the delivery is a plain duplicate); without `again`,
 * nothing is sent.
 */
export async function lookAgainWhenLapsed<R extends LeasedJob>(
  store: Pick<LeasedJobStore<R>, "get">,
  id: string,
  clock: Clock,
  again: ((record: R, delaySeconds: number) => Promise<void>) | undefined,
): Promise<void> {
  const record = again && (await store.get(id));
  if (!record || record.status !== "running" || record.leaseUntil === undefined) return;
  const waitMs = Math.max(0, record.leaseUntil - clock.now());
  await again!(record, Math.min(MAX_DELAY_SECONDS, Math.ceil(waitMs / 1000) + 1));
}
