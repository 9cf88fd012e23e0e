import { allItems } from "../../dynamo/paginate.ts";
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import {
  emptyProfile,
  repairProfile,
  type Profile,
  type ProfileLedger,
  type ProfileSet,
  type ProfileStore,
} from "@harness-s/core/profile";
import { aws, translateAwsError } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** Message ids one transaction claims at most (DynamoDB allows 100 items; one is the profile). */
const MAX_CLAIMS = 99;
/**
 * How long a batch keeps retrying moved revisions before its messages fail (and SQS redelivers
 * them). A time budget, not a count of tries: under contention some writer commits every round,
 * but how many rounds one writer loses depends on how the others interleave.
 */
const RETRY_BUDGET_MS = 20_000;
/** The longest wait between two tries (full jitter: a random wait up to min(this, 10 ms · 2^try)). */
const MAX_BACKOFF_MS = 500;

interface PendingApply {
  messageId: string;
  update: (current: Profile) => Profile;
  resolve: (outcome: "applied" | "duplicate") => void;
  reject: (err: Error) => void;
}

/**
 * Profiles, one item per (pool, harness) with a revision number for optimistic concurrency. A
 * stored profile that no longer parses (left by a write before names were guarded: NaN counts
 * stored as null) is repaired on read ({@link repairProfile}) and logged; the next evidence
 * applied to that harness writes the repaired profile back.
 */
export class DynamoProfileStore implements ProfileStore, ProfileLedger {
  /**
   * Transactions written for evidence, how many committed, and how many met a moved revision (for
   * benches and tests). Conflicts grow with contention (and so with machine load); commits do not.
   */
  readonly stats = { transactions: 0, commits: 0, conflicts: 0 };
  private readonly pending = new Map<string, PendingApply[]>();
  private readonly flushing = new Set<string>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly log: (line: string) => void = (line) => console.warn(line),
    private readonly retryBudgetMs = RETRY_BUDGET_MS,
  ) {}

  private decode(item: Record<string, unknown>): Profile {
    const harnessId = String(item.harnessId);
    const { profile, dropped } = repairProfile(JSON.parse(item.body as string), harnessId);
    if (dropped.length)
      this.log(`profile ${String(item.poolId)}/${harnessId}: repaired on read, dropped ${dropped.join(", ")}`);
    return profile;
  }

  async get(poolId: string): Promise<ProfileSet> {
    const set: ProfileSet = {};
    const items = await allItems("get profiles", (start) =>
      this.doc.send(
        new QueryCommand({
          TableName: this.tables.Profiles,
          KeyConditionExpression: "poolId = :p",
          ExpressionAttributeValues: { ":p": poolId },
          ExclusiveStartKey: start,
        }),
      ),
    );
    for (const item of items) {
      const profile = this.decode(item);
      Object.defineProperty(set, profile.harnessId, {
        value: profile,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return set;
  }

  async put(poolId: string, profile: Profile): Promise<void> {
    const current = await this.read(poolId, profile.harnessId);
    await aws("put profile", () =>
      this.doc.send(
        new PutCommand({
          TableName: this.tables.Profiles,
          Item: {
            poolId,
            harnessId: profile.harnessId,
            policyVersion: profile.policyVersion,
            rev: (current?.rev ?? 0) + 1,
            body: JSON.stringify(profile),
          },
        }),
      ),
    );
  }

  /**
   * Claims the message id and writes the next profile revision in one transaction. Calls for the
   * same harness that arrive together (a batch's records run concurrently) are coalesced: each
   * transaction claims every waiting message id (up to {@link MAX_CLAIMS}) and writes one revision
   * with all their updates, so a hot profile costs one write per batch, not one contended write
   * per outcome. A claimed id is a duplicate delivery (answered "duplicate", its update left out);
   * a moved revision is another process's write (read again and retry, with jittered backoff).
   */
  applyOnce(
    messageId: string,
    poolId: string,
    harnessId: string,
    update: (current: Profile) => Profile,
  ): Promise<"applied" | "duplicate"> {
    const key = JSON.stringify([poolId, harnessId]);
    return new Promise((resolve, reject) => {
      const waiting = this.pending.get(key) ?? [];
      waiting.push({ messageId, update, resolve, reject });
      this.pending.set(key, waiting);
      if (!this.flushing.has(key)) void this.flush(key, poolId, harnessId);
    });
  }

  private async flush(key: string, poolId: string, harnessId: string): Promise<void> {
    this.flushing.add(key);
    try {
      await new Promise((r) => setImmediate(r));
      for (let waiting = this.pending.get(key); waiting?.length; waiting = this.pending.get(key)) {
        await this.applyTogether(poolId, harnessId, waiting.splice(0, MAX_CLAIMS));
      }
    } finally {
      this.pending.delete(key);
      this.flushing.delete(key);
    }
  }

  private async applyTogether(poolId: string, harnessId: string, calls: PendingApply[]): Promise<void> {
    // A message id twice in one batch: the first is claimed, the others follow its outcome.
    const byId = new Map<string, PendingApply[]>();
    for (const c of calls) byId.set(c.messageId, [...(byId.get(c.messageId) ?? []), c]);
    const settle = (id: string, outcome: "applied" | "duplicate" | Error) => {
      for (const [i, c] of byId.get(id)!.entries()) {
        if (outcome instanceof Error) c.reject(outcome);
        else c.resolve(i === 0 ? outcome : "duplicate");
      }
    };
    let live = [...byId.keys()];
    const deadline = performance.now() + this.retryBudgetMs;
    for (let attempt = 0; live.length > 0; attempt++) {
      if (attempt > 0 && performance.now() >= deadline) {
        for (const id of live)
          settle(
            id,
            new ConflictError(
              `profile ${poolId}/${harnessId} kept changing under concurrent writers for ${this.retryBudgetMs} ms`,
            ),
          );
        return;
      }
      if (attempt > 0)
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(MAX_BACKOFF_MS, 10 * 2 ** attempt)));
      let current: { profile: Profile; rev: number } | undefined;
      try {
        current = await this.read(poolId, harnessId);
      } catch (err) {
        for (const id of live) settle(id, err as Error);
        return;
      }
      let next = current?.profile ?? emptyProfile(harnessId, 0);
      const applied: string[] = [];
      for (const id of live) {
        try {
          next = byId.get(id)![0]!.update(next);
          applied.push(id);
        } catch (err) {
          settle(id, err as Error);
        }
      }
      live = applied;
      if (live.length === 0) return;
      const rev = current?.rev ?? 0;
      this.stats.transactions++;
      try {
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [...live.map((id) => this.claim(id)), this.revision(poolId, harnessId, next, rev)],
          }),
        );
        this.stats.commits++;
        for (const id of live) settle(id, "applied");
        return;
      } catch (err) {
        const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
        if (!reasons) {
          const failure = translateAwsError(err, "apply profile evidence");
          for (const id of live) settle(id, failure);
          return;
        }
        const claimed = live.filter((_, i) => reasons[i]?.Code === "ConditionalCheckFailed");
        for (const id of claimed) settle(id, "duplicate");
        live = live.filter((id) => !claimed.includes(id));
        if (reasons[reasons.length - 1]?.Code === "ConditionalCheckFailed") this.stats.conflicts++;
      }
    }
  }

  private claim(messageId: string) {
    return {
      Put: {
        TableName: this.tables.Processed,
        Item: { id: messageId, expiresAt: Math.floor(Date.now() / 1000) + 7 * 24 * 3600 },
        ConditionExpression: "attribute_not_exists(id)",
      },
    };
  }

  private revision(poolId: string, harnessId: string, next: Profile, rev: number) {
    return {
      Put: {
        TableName: this.tables.Profiles,
        Item: { poolId, harnessId, policyVersion: next.policyVersion, rev: rev + 1, body: JSON.stringify(next) },
        ConditionExpression: rev === 0 ? "attribute_not_exists(poolId)" : "rev = :rev",
        ExpressionAttributeValues: rev === 0 ? undefined : { ":rev": rev },
      },
    };
  }

  private async read(poolId: string, harnessId: string): Promise<{ profile: Profile; rev: number } | undefined> {
    const out = await aws("get profile", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Profiles, Key: { poolId, harnessId } })),
    );
    return out.Item ? { profile: this.decode(out.Item), rev: Number(out.Item.rev ?? 0) } : undefined;
  }
}
