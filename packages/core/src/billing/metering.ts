import { zeroUsage, type MeterOptions, type Usage, type UsageMeter } from "./usage.ts";

/**
 * The most tokens one model call is metered for, prompt or completion: larger than any model's
 * context, so a true count is never cut, and small enough that no sum of them overflows a meter.
 */
export const MAX_TOKENS_PER_CALL = 2_000_000;
/** The most one request adds to any usage field (a bound on what a bug or a hostile count can do). */
export const MAX_USAGE_PER_REQUEST = 1e10;

/** Token counts as an endpoint reported them, read defensively. */
export interface ReportedUsage {
  promptTokens: number;
  completionTokens: number;
  /** Why a count was not taken as reported (not a non-negative number, or above {@link MAX_TOKENS_PER_CALL}). */
  suspect?: string;
}

const count = (raw: unknown, name: string, problems: string[]): number => {
  if (raw === undefined || raw === null) return 0;
  if (typeof raw !== "number" || !Number.isFinite(raw) || raw < 0) {
    problems.push(`${name} ${JSON.stringify(raw)} is not a token count`);
    return 0;
  }
  if (raw > MAX_TOKENS_PER_CALL) {
    problems.push(`${name} ${raw} is above ${MAX_TOKENS_PER_CALL}; metered as ${MAX_TOKENS_PER_CALL}`);
    return MAX_TOKENS_PER_CALL;
  }
  return Math.floor(raw);
};

/**
 * An OpenAI-style `usage` object (`prompt_tokens`, `completion_tokens`) from an endpoint this
 * service does not run: counts are non-negative integers at most {@link MAX_TOKENS_PER_CALL}
 * each; anything else is noted in `suspect` (for the log) instead of failing the call or the meter.
 *
 * @example
 * reportedUsage({ prompt_tokens: 2 ** 53 - 1, completion_tokens: 5 }); // { promptTokens: 2_000_000, completionTokens: 5, suspect: "…" }
 */
export function reportedUsage(raw: unknown): ReportedUsage | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const u = raw as Record<string, unknown>;
  const problems: string[] = [];
  const out = {
    promptTokens: count(u.prompt_tokens, "prompt_tokens", problems),
    completionTokens: count(u.completion_tokens, "completion_tokens", problems),
  };
  return problems.length ? { ...out, suspect: problems.join("; ") } : out;
}

/** What a voter's spend adds to its key's usage. */
export function spendUsage(spent: VoterSpend): Pick<Usage, "llmTokens" | "llmCostUsd"> {
  return { llmTokens: spent.usage.promptTokens + spent.usage.completionTokens, llmCostUsd: spent.costUsd ?? 0 };
}

/** Adds usage field by field. */
export function mergeUsage(a: Partial<Usage> | undefined, b: Partial<Usage>): Partial<Usage> {
  const sum: Partial<Usage> = { ...a };
  for (const [k, v] of Object.entries(b) as [keyof Usage, number][]) sum[k] = (sum[k] ?? 0) + v;
  return sum;
}

/**
 * One request's usage with every field a finite number in [0, {@link MAX_USAGE_PER_REQUEST}]; what was cut is named.
 */
export function boundedUsage(used: Partial<Usage>): { usage: Partial<Usage>; cut: string[] } {
  const usage: Partial<Usage> = {};
  const cut: string[] = [];
  for (const [k, v] of Object.entries(used) as [keyof Usage, number][]) {
    if (!(k in zeroUsage)) continue;
    const bounded = Number.isFinite(v) ? Math.min(Math.max(v, 0), MAX_USAGE_PER_REQUEST) : 0;
    if (bounded !== v) cut.push(`${k} ${v} → ${bounded}`);
    usage[k] = bounded;
  }
  return { usage, cut };
}

/**
 * A meter that never drops a record: a write that fails is kept (merged per key) and sent again
 * with the key's next write, or by `flush`; each failure is logged with what is owed. Usage is
 * bounded ({@link boundedUsage}) before it is written, so no count from outside can make a write fail.
 *
 * @example
 * const meter = new BackloggedMeter(dynamoMeter, (line) => console.error(line));
 * await meter.add("k1", { requests: 1 }); // throws if the store fails; the record waits in the backlog
 */
export class BackloggedMeter {
  /** What failed writes still owe, by key and job (`keyId\njobId`). */
  private readonly owed = new Map<string, Partial<Usage>>();

  constructor(
    private readonly inner: Pick<UsageMeter, "add">,
    private readonly log: (line: string) => void,
  ) {}

  /** What is waiting to be written for a key (and job), undefined when nothing is. */
  pending(keyId: string, jobId?: string): Partial<Usage> | undefined {
    return this.owed.get(`${keyId}\n${jobId ?? ""}`);
  }

  async add(keyId: string, used: Partial<Usage>, opts: MeterOptions = {}): Promise<void> {
    const slot = `${keyId}\n${opts.jobId ?? ""}`;
    const { usage, cut } = boundedUsage(used);
    if (cut.length) this.log(`metering for ${keyId}: out-of-range usage bounded (${cut.join(", ")})`);
    // An add metered once under its id is not kept to merge with another: its caller sends it again (a slot redelivered).
    if (opts.once !== undefined) return this.inner.add(keyId, usage, opts);
    const total = mergeUsage(this.owed.get(slot), usage);
    this.owed.delete(slot);
    if (!Object.values(total).some((v) => v !== 0)) return;
    try {
      await this.inner.add(keyId, total, opts);
    } catch (err) {
      this.owed.set(slot, mergeUsage(this.owed.get(slot), total));
      this.log(
        `metering for ${keyId} failed (${String(err)}); kept to send again: ${JSON.stringify(this.owed.get(slot))}`,
      );
      throw err;
    }
    if (this.owed.size) void this.flush();
  }

  /** Sends every key's backlog once more; what fails again stays. */
  async flush(): Promise<void> {
    for (const slot of [...this.owed.keys()]) {
      const [keyId, jobId] = slot.split("\n") as [string, string];
      await this.add(keyId, {}, jobId ? { jobId } : {}).catch(() => undefined);
    }
  }
}

/** Tokens an LLM voter used, and their price when one is configured. */
export interface VoterSpend {
  usage: { promptTokens: number; completionTokens: number };
  costUsd?: number;
}
