import { allItems } from "../../dynamo/paginate.ts";
import {
  GetCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from "@aws-sdk/lib-dynamodb";
import { ConflictError, systemClock, type Clock } from "@harness-s/core";
import {
  USAGE_LIMITS,
  byKeyAndDay,
  dayOf,
  jobUsageKey,
  zeroUsage,
  type UsageDay,
  type UsageQuery,
  type Usage,
  type UsageMeter,
  type MeterOptions,
} from "@harness-s/core/billing";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** How long an add's `once` marker is kept: past any redelivery of the slot it names (the queue keeps messages 4 days). */
const ONCE_TTL_SECONDS = 14 * 24 * 3600;

/** Whether a metering transaction was refused only because its `once` marker (its first item) exists. */
function meteredAlready(err: unknown): boolean {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[]; message?: string };
  if (e.name !== "TransactionCanceledException") return false;
  const codes =
    e.CancellationReasons?.map((r) => r.Code ?? "None") ?? /\[(.*)\]/.exec(e.message ?? "")?.[1]?.split(/,\s*/);
  return codes?.[0] === "ConditionalCheckFailed" && codes.slice(1).every((c) => c === "None");
}

/** Usage totals per key (and per job), and per key and day: one transaction (one write call) per `add`. */
export class DynamoUsageMeter implements UsageMeter {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * One transaction: the key's totals, its day, the job's totals; with `once`, a marker of it in `Processed` written
   * only if absent, so an add under an id already metered changes nothing (and is no error).
   */
  async add(keyId: string, usage: Partial<Usage>, opts: MeterOptions = {}): Promise<void> {
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
      ...(opts.jobId
        ? [{ Update: { TableName: this.tables.Usage, Key: { keyId: jobUsageKey(opts.jobId) }, ...update } }]
        : []),
    ];
    if (opts.once === undefined) {
      await aws("meter usage", () => this.doc.send(new TransactWriteCommand({ TransactItems: items })));
      return;
    }
    const marker = {
      Put: {
        TableName: this.tables.Processed,
        Item: { id: `meter#${opts.once}`, expiresAt: Math.floor(this.clock.now() / 1000) + ONCE_TTL_SECONDS },
        ConditionExpression: "attribute_not_exists(id)",
      },
    };
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: [marker, ...items] }));
    } catch (err) {
      if (meteredAlready(err)) return;
      await aws("meter usage", () => Promise.reject(err));
    }
  }

  async get(keyId: string): Promise<Usage> {
    const out = await aws("get usage", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Usage, Key: { keyId }, ConsistentRead: true })),
    );
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
    return this.conditionalAdd(keyId, field, amount, "attribute_not_exists(#f) OR #f <= :room", {
      ":room": limit - amount,
    });
  }

  acquireSlot(keyId: string, limit: number): Promise<boolean> {
    return this.conditionalAdd(keyId, "activeExperiments", 1, "attribute_not_exists(#f) OR #f < :limit", {
      ":limit": limit,
    });
  }

  async releaseSlot(keyId: string): Promise<void> {
    await this.conditionalAdd(keyId, "activeExperiments", -1, "#f > :zero", { ":zero": 0 });
  }

  async slotsHeld(keyId: string): Promise<number> {
    const out = await aws("get usage", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Usage, Key: { keyId }, ConsistentRead: true })),
    );
    return Number(out.Item?.activeExperiments ?? 0);
  }

  private async conditionalAdd(
    keyId: string,
    field: string,
    amount: number,
    condition: string,
    values: Record<string, number>,
  ): Promise<boolean> {
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
