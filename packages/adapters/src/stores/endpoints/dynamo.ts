import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from "@aws-sdk/lib-dynamodb";
import { PolicyEndpointRecord, type PolicyEndpointStore } from "@harness-s/core/callers";
import { StoreUnavailableError } from "@harness-s/core";
import { aws, translateAwsError } from "../../errors.ts";
import { allItems } from "../../dynamo/paginate.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** The key's counter item: an id no registration has (ids start with a letter or digit). */
const COUNTER_ID = "#count";
/** How long a write keeps retrying transactions that conflicted with another process's write to the same key. */
const RETRY_BUDGET_MS = 20_000;
/** The longest wait between two tries (full jitter: a random wait up to min(this, 10 ms · 2^try)). */
const MAX_BACKOFF_MS = 500;

const RETRY = Symbol("retry");
type Try<T> = T | typeof RETRY;

/** The cancellation reason codes of a cancelled transaction, one per item; undefined for any other error. */
const reasonsOf = (err: unknown) =>
  (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons?.map((r) => r.Code);
const FAILED = "ConditionalCheckFailed";

/**
 * Registered policy endpoints, one item per (key, id), and per key a counter item (`held`) that
 * a registration's put and a delete change in the same transaction as the record: the counter's
 * condition (`held < limit`) is what holds the per-key limit under concurrent writers. Writes to
 * one key from this process go one at a time (they would only cancel each other's transactions);
 * another process's conflicting write is retried with jittered backoff. A key whose records
 * predate the counter has it created from a count of them on its first write.
 */
export class DynamoPolicyEndpointStore implements PolicyEndpointStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  /** The last write queued per key in this process. */
  private readonly queued = new Map<string, Promise<unknown>>();

  async put(record: PolicyEndpointRecord, limit: number): Promise<"created" | "replaced" | "full"> {
    const item = PolicyEndpointRecord.parse(record);
    return this.retrying(item.keyId, "put policy endpoint", async () => {
      const reasons = await this.transact("put policy endpoint", [
        { Put: { TableName: this.table, Item: item, ConditionExpression: "attribute_not_exists(id)" } },
        this.count(item.keyId, "SET held = held + :one", "held < :limit", { ":one": 1, ":limit": limit }),
      ]);
      if (!reasons) return "created";
      if (reasons[0] === FAILED) return (await this.replace(item)) ? "replaced" : RETRY;
      if (reasons[1] === FAILED) return (await this.ensureCounter(item.keyId)) ? RETRY : "full";
      return RETRY;
    });
  }

  async get(keyId: string, id: string): Promise<PolicyEndpointRecord | undefined> {
    if (id === COUNTER_ID) return undefined;
    const out = await aws("get policy endpoint", () =>
      this.doc.send(new GetCommand({ TableName: this.table, Key: { keyId, id }, ConsistentRead: true })),
    );
    return out.Item ? PolicyEndpointRecord.parse(out.Item) : undefined;
  }

  async list(keyId: string): Promise<PolicyEndpointRecord[]> {
    const items = await allItems("list policy endpoints", (start) =>
      this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: "keyId = :k",
          ExpressionAttributeValues: { ":k": keyId },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      ),
    );
    return items.filter((i) => i.id !== COUNTER_ID).map((i) => PolicyEndpointRecord.parse(i));
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    if (id === COUNTER_ID) return false;
    return this.retrying(keyId, "delete policy endpoint", async () => {
      const reasons = await this.transact("delete policy endpoint", [
        { Delete: { TableName: this.table, Key: { keyId, id }, ConditionExpression: "attribute_exists(id)" } },
        this.count(keyId, "SET held = held - :one", "attribute_exists(held)", { ":one": 1 }),
      ]);
      if (!reasons) return true;
      if (reasons[0] === FAILED) return false;
      if (reasons[1] === FAILED) await this.ensureCounter(keyId);
      return RETRY;
    });
  }

  private get table(): string {
    return this.tables.PolicyEndpoints;
  }

  private count(keyId: string, update: string, condition: string, values: Record<string, number>) {
    return {
      Update: {
        TableName: this.table,
        Key: { keyId, id: COUNTER_ID },
        UpdateExpression: update,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
      },
    };
  }

  /** Runs a transaction: undefined when it committed, its cancellation reasons when it was cancelled. */
  private async transact(what: string, items: object[]): Promise<(string | undefined)[] | undefined> {
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: items as never }));
      return undefined;
    } catch (err) {
      const reasons = reasonsOf(err);
      if (!reasons) throw translateAwsError(err, what);
      return reasons;
    }
  }

  /** Overwrites a record the key holds (the count unchanged); false when it is gone meanwhile. */
  private async replace(item: PolicyEndpointRecord): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({ TableName: this.table, Item: item, ConditionExpression: "attribute_exists(id)" }),
      );
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === "ConditionalCheckFailedException") return false;
      throw translateAwsError(err, "replace policy endpoint");
    }
  }

  /**
   * Creates the key's counter from a count of its records when it has none (true: try again);
   * false when it exists. Records change only in transactions that need the counter, so none
   * are written or deleted between the count and the counter's conditional put.
   */
  private async ensureCounter(keyId: string): Promise<boolean> {
    const got = await aws("read policy endpoint count", () =>
      this.doc.send(new GetCommand({ TableName: this.table, Key: { keyId, id: COUNTER_ID }, ConsistentRead: true })),
    );
    if (got.Item) return false;
    const held = (await this.list(keyId)).length;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: { keyId, id: COUNTER_ID, held },
          ConditionExpression: "attribute_not_exists(id)",
        }),
      );
    } catch (err) {
      if ((err as { name?: string }).name !== "ConditionalCheckFailedException")
        throw translateAwsError(err, "create policy endpoint count");
    }
    return true;
  }

  /**
   * Tries `once` until it answers, after this process's earlier writes to the key, waiting a
   * jittered backoff after each conflict, within {@link RETRY_BUDGET_MS} (then 503: try again).
   */
  private retrying<T>(keyId: string, what: string, once: () => Promise<Try<T>>): Promise<T> {
    const run = async () => {
      const deadline = performance.now() + RETRY_BUDGET_MS;
      for (let attempt = 0; ; attempt++) {
        const got = await once();
        if (got !== RETRY) return got;
        if (performance.now() >= deadline)
          throw new StoreUnavailableError(
            `${what}: other writes to this key kept conflicting for ${RETRY_BUDGET_MS} ms`,
          );
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(MAX_BACKOFF_MS, 10 * 2 ** attempt)));
      }
    };
    const result = (this.queued.get(keyId) ?? Promise.resolve()).then(run, run);
    const settled = result.catch(() => undefined);
    this.queued.set(keyId, settled);
    void settled.then(() => this.queued.get(keyId) === settled && this.queued.delete(keyId));
    return result;
  }
}
