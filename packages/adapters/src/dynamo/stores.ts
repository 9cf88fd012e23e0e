import { allItems } from "./paginate.ts";
import { GetCommand, PutCommand, QueryCommand, ScanCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ApiKeyRecord, type ApiKeyStore } from "@harness-s/core/access";
import { ConflictError, HarnessPool, parseOrThrow, systemClock, type Clock, type PoolStore } from "@harness-s/core";
import { RescueJob, SlotFailure, type RolloutSpend, type RescueJobStore } from "@harness-s/core/rescue";
import { RoutingDecision } from "@harness-s/core/voting";
import { USAGE_LIMITS, byKeyAndDay, dayOf, jobUsageKey, zeroUsage, type UsageDay, type UsageQuery, type Usage, type UsageMeter } from "@harness-s/core/billing";
import type { DecisionStore } from "@harness-s/core/routing";
import { aws } from "../errors.ts";
import type { TableNames } from "./tables.ts";

/**
 * Pools as one item each (the spec JSON is far below DynamoDB's 400 KB limit); a conditional put
 * keeps them immutable.
 */
export class DynamoPoolStore implements PoolStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(pool: HarnessPool): Promise<void> {
    parseOrThrow(HarnessPool, pool, "pool"); // refused on write, never found unreadable on a later read
    try {
      await aws("put pool", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.Pools,
            Item: { id: pool.id, version: pool.version, siblings: pool.siblings.length, body: JSON.stringify(pool) },
            ConditionExpression: "attribute_not_exists(id) OR version = :v",
            ExpressionAttributeValues: { ":v": pool.version },
          }),
        ),
      );
    } catch (err) {
      if (err instanceof ConflictError) throw new ConflictError(`pool ${pool.id} already exists with another version; pools are immutable`);
      throw err;
    }
  }

  async get(id: string): Promise<HarnessPool | undefined> {
    const out = await aws("get pool", () => this.doc.send(new GetCommand({ TableName: this.tables.Pools, Key: { id } })));
    return out.Item ? HarnessPool.parse(JSON.parse(out.Item.body as string)) : undefined;
  }

  async list() {
    // A Scan stops at 1 MB a page: every page is read.
    const items = await allItems("list pools", (start) =>
      this.doc.send(new ScanCommand({ TableName: this.tables.Pools, ProjectionExpression: "id, version, siblings", ExclusiveStartKey: start })),
    );
    return items.map((i) => ({ id: String(i.id), version: String(i.version), siblings: Number(i.siblings) })).sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}

export class DynamoDecisionStore implements DecisionStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly ttlSeconds?: number,
    private readonly now: () => number = Date.now,
  ) {}

  async put(decision: RoutingDecision): Promise<void> {
    const item: Record<string, unknown> = { id: decision.id, body: JSON.stringify(decision) };
    if (this.ttlSeconds) item.expiresAt = Math.floor(this.now() / 1000) + this.ttlSeconds;
    try {
      await aws("put decision", () => this.doc.send(new PutCommand({ TableName: this.tables.Decisions, Item: item, ConditionExpression: "attribute_not_exists(id)" })));
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }

  async get(id: string): Promise<RoutingDecision | undefined> {
    const out = await aws("get decision", () => this.doc.send(new GetCommand({ TableName: this.tables.Decisions, Key: { id } })));
    return out.Item ? RoutingDecision.parse(JSON.parse(out.Item.body as string)) : undefined;
  }
}

export class DynamoApiKeyStore implements ApiKeyStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(key: ApiKeyRecord): Promise<void> {
    await aws("put api key", () => this.doc.send(new PutCommand({ TableName: this.tables.ApiKeys, Item: ApiKeyRecord.parse(key) })));
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const out = await aws("find api key", () => this.doc.send(new GetCommand({ TableName: this.tables.ApiKeys, Key: { hash } })));
    return out.Item ? ApiKeyRecord.parse(out.Item) : undefined;
  }
}

/** Usage totals per key (and per job), and per key and day: one transaction (one write call) per `add`. */
export class DynamoUsageMeter implements UsageMeter {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly clock: Clock = systemClock,
  ) {}

  async add(keyId: string, usage: Partial<Usage>, opts: { jobId?: string } = {}): Promise<void> {
    const fields = (Object.keys(zeroUsage) as (keyof Usage)[]).filter((k) => (usage[k] ?? 0) !== 0);
    if (fields.length === 0) return;
    const update = {
      UpdateExpression: `ADD ${fields.map((f) => `#${f} :${f}`).join(", ")}`,
      ExpressionAttributeNames: Object.fromEntries(fields.map((f) => [`#${f}`, f])),
      ExpressionAttributeValues: Object.fromEntries(fields.map((f) => [`:${f}`, usage[f]])),
    };
    const items = [
      { Update: { TableName: this.tables.Usage, Key: { keyId }, ...update } },
      { Update: { TableName: this.tables.UsageDays, Key: { keyId, day: dayOf(this.clock.now()) }, ...update } },
      ...(opts.jobId ? [{ Update: { TableName: this.tables.Usage, Key: { keyId: jobUsageKey(opts.jobId) }, ...update } }] : []),
    ];
    await aws("meter usage", () => this.doc.send(new TransactWriteCommand({ TransactItems: items })));
  }

  async get(keyId: string): Promise<Usage> {
    const out = await aws("get usage", () => this.doc.send(new GetCommand({ TableName: this.tables.Usage, Key: { keyId }, ConsistentRead: true })));
    return toUsage(out.Item);
  }

  job(jobId: string): Promise<Usage> {
    return this.get(jobUsageKey(jobId));
  }

  /** One key's days by a Query; every key's by a Scan of the period (an export, not a hot path). */
  async byDay(q: UsageQuery): Promise<UsageDay[]> {
    const values = { ":from": q.from, ":to": q.to };
    const items = await allItems(
      "read usage by day",
      (start) =>
        this.doc.send(
          q.keyId === undefined
            ? new ScanCommand({
                TableName: this.tables.UsageDays,
                FilterExpression: "#day BETWEEN :from AND :to",
                ExpressionAttributeNames: { "#day": "day" },
                ExpressionAttributeValues: values,
                ExclusiveStartKey: start,
              })
            : new QueryCommand({
                TableName: this.tables.UsageDays,
                KeyConditionExpression: "keyId = :k AND #day BETWEEN :from AND :to",
                ExpressionAttributeNames: { "#day": "day" },
                ExpressionAttributeValues: { ...values, ":k": q.keyId },
                ExclusiveStartKey: start,
              }),
        ),
      USAGE_LIMITS.maxRows,
    );
    return items.map((i) => ({ keyId: String(i.keyId), day: String(i.day), usage: toUsage(i) })).sort(byKeyAndDay);
  }

  /** One conditional UpdateItem: the condition and the ADD are applied together by DynamoDB. */
  addWithin(keyId: string, field: keyof Usage, amount: number, limit: number): Promise<boolean> {
    return this.conditionalAdd(keyId, field, amount, "attribute_not_exists(#f) OR #f <= :room", { ":room": limit - amount });
  }

  acquireSlot(keyId: string, limit: number): Promise<boolean> {
    return this.conditionalAdd(keyId, "activeExperiments", 1, "attribute_not_exists(#f) OR #f < :limit", { ":limit": limit });
  }

  async releaseSlot(keyId: string): Promise<void> {
    await this.conditionalAdd(keyId, "activeExperiments", -1, "#f > :zero", { ":zero": 0 });
  }

  async slotsHeld(keyId: string): Promise<number> {
    const out = await aws("get usage", () => this.doc.send(new GetCommand({ TableName: this.tables.Usage, Key: { keyId }, ConsistentRead: true })));
    return Number(out.Item?.activeExperiments ?? 0);
  }

  private async conditionalAdd(keyId: string, field: string, amount: number, condition: string, values: Record<string, number>): Promise<boolean> {
    try {
      await aws("meter usage", () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tables.Usage,
            Key: { keyId },
            UpdateExpression: "ADD #f :amount",
            ConditionExpression: condition,
            ExpressionAttributeNames: { "#f": field },
            ExpressionAttributeValues: { ":amount": amount, ...values },
          }),
        ),
      );
      return true;
    } catch (err) {
      if (err instanceof ConflictError) return false;
      throw err;
    }
  }
}

function toUsage(item: Record<string, unknown> | undefined): Usage {
  const u = { ...zeroUsage };
  for (const k of Object.keys(zeroUsage) as (keyof Usage)[]) u[k] = Number(item?.[k] ?? 0);
  return u;
}

export class DynamoRescueJobStore implements RescueJobStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async create(job: RescueJob): Promise<void> {
    await aws("create rescue", () =>
      this.doc.send(new PutCommand({ TableName: this.tables.RescueJobs, Item: RescueJob.parse(job), ConditionExpression: "attribute_not_exists(id)" })),
    );
  }

  async get(id: string): Promise<RescueJob | undefined> {
    const out = await aws("get rescue", () => this.doc.send(new GetCommand({ TableName: this.tables.RescueJobs, Key: { id }, ConsistentRead: true })));
    return out.Item ? RescueJob.parse(out.Item) : undefined;
  }

  async recordFailure(id: string, index: number, failure: SlotFailure): Promise<void> {
    await this.updateIfExists("record rescue failure", id, "SET failures = list_append(if_not_exists(failures, :none), :f)", {
      ":none": [],
      ":f": [{ index, ...SlotFailure.parse(failure) }],
    });
  }

  async cancel(id: string, at: number): Promise<void> {
    await this.updateIfExists("cancel rescue", id, "SET cancelledAt = if_not_exists(cancelledAt, :at)", { ":at": at });
  }

  async addSpend(id: string, spend: RolloutSpend): Promise<void> {
    await this.updateIfExists("add rescue spend", id, "ADD spentPolicyTokens :t, spentPolicyMs :p, spentEnvironmentMs :ms", {
      ":t": spend.policyTokens,
      ":p": spend.policyMs,
      ":ms": spend.environmentMs,
    });
  }

  /** One UpdateItem on an existing job; an unknown job is left alone (no item is created). */
  private async updateIfExists(what: string, id: string, update: string, values: Record<string, unknown>): Promise<void> {
    try {
      await aws(what, () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tables.RescueJobs,
            Key: { id },
            UpdateExpression: update,
            ConditionExpression: "attribute_exists(id)",
            ExpressionAttributeValues: values,
          }),
        ),
      );
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}
