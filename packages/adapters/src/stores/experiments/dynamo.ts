import { gunzipSync, gzipSync } from "node:zlib";
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type KeyPage, type KeyPageRequest, listPosition } from "@harness-s/core";
import { ConflictError } from "@harness-s/core";
import { ExperimentRecord, type ExperimentStore } from "@harness-s/core/experiment";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";
import { queryByKey } from "../../dynamo/by-key.ts";

/**
 * Experiment records: `status` and `leaseUntil` are plain attributes so the coordinator's claim
 * is one conditional update; the record itself is gzip-compressed JSON (results grow per arm).
 */
export class DynamoExperimentStore implements ExperimentStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  private item(record: ExperimentRecord) {
    const parsed = ExperimentRecord.parse(record);
    return {
      id: parsed.id,
      status: parsed.status,
      leaseUntil: parsed.leaseUntil ?? 0,
      // The key's list (BY_KEY_INDEX): set once here, never changed by a save.
      keyId: parsed.keyId,
      listAt: listPosition(parsed.createdAt, parsed.id),
      body: gzipSync(Buffer.from(JSON.stringify(parsed))),
    };
  }

  async create(record: ExperimentRecord): Promise<void> {
    try {
      await aws("create experiment", () =>
        this.doc.send(new PutCommand({ TableName: this.tables.Experiments, Item: this.item(record), ConditionExpression: "attribute_not_exists(id)" })),
      );
    } catch (err) {
      if (err instanceof ConflictError) throw new ConflictError(`experiment ${record.id} exists`);
      throw err;
    }
  }

  async get(id: string): Promise<ExperimentRecord | undefined> {
    const out = await aws("get experiment", () => this.doc.send(new GetCommand({ TableName: this.tables.Experiments, Key: { id }, ConsistentRead: true })));
    return out.Item ? recordOf(out.Item) : undefined;
  }

  /** The key's runs through BY_KEY_INDEX (eventually consistent: a run just started may show a moment later). */
  async listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<ExperimentRecord>> {
    const found = await queryByKey(this.doc, this.tables.Experiments, "list experiments", keyId, page);
    return { ...found, items: found.items.map(recordOf) };
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<ExperimentRecord | undefined> {
    try {
      await aws("claim experiment", () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tables.Experiments,
            Key: { id },
            UpdateExpression: "SET #s = :running, leaseUntil = :lease",
            ConditionExpression: "attribute_exists(id) AND (#s = :queued OR (#s = :running AND leaseUntil < :now))",
            ExpressionAttributeNames: { "#s": "status" },
            ExpressionAttributeValues: { ":running": "running", ":queued": "queued", ":lease": leaseUntil, ":now": now },
          }),
        ),
      );
    } catch (err) {
      if (err instanceof ConflictError) return undefined;
      throw err;
    }
    return this.get(id);
  }

  /** An update of the record's own attributes: `cancelRequested`, set by the API meanwhile, stays. */
  async save(record: ExperimentRecord): Promise<void> {
    const { status, leaseUntil, body } = this.item(record);
    await aws("save experiment", () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.tables.Experiments,
          Key: { id: record.id },
          UpdateExpression: "SET #s = :s, leaseUntil = :l, body = :b",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":s": status, ":l": leaseUntil, ":b": body },
        }),
      ),
    );
  }

  async requestCancel(id: string, now: number): Promise<ExperimentRecord | undefined> {
    const update = (from: string, set: string, values: Record<string, unknown>) =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.tables.Experiments,
          Key: { id },
          UpdateExpression: set,
          ConditionExpression: "attribute_exists(id) AND #s = :from",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":from": from, ...values },
        }),
      );
    for (const [from, set, values] of [
      ["queued", "SET #s = :to, cancelRequested = :t, leaseUntil = :zero, cancelledAt = :now", { ":to": "cancelled", ":t": true, ":zero": 0, ":now": now }],
      ["running", "SET cancelRequested = :t", { ":t": true }],
    ] as const) {
      try {
        await aws("cancel experiment", () => update(from, set, values));
        break;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    const out = await aws("read cancellation", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Experiments, Key: { id }, ConsistentRead: true, ProjectionExpression: "cancelRequested" })),
    );
    return out.Item?.cancelRequested === true;
  }
}

/** A stored item's record: the compressed body with the attributes written apart (state, lease, cancellation). */
function recordOf(item: Record<string, unknown>): ExperimentRecord {
  const record = ExperimentRecord.parse(JSON.parse(gunzipSync(Buffer.from(item.body as Uint8Array)).toString()));
  return {
    ...record,
    status: ExperimentRecord.shape.status.parse(item.status),
    leaseUntil: Number(item.leaseUntil) || undefined,
    ...(item.cancelRequested === true ? { cancelRequested: true } : {}),
  };
}
