import { gunzipSync, gzipSync } from "node:zlib";
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import { PoolEvolutionRecord, type PoolEvolutionStore } from "@harness-s/core/pools";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";

/**
 * Pool evolution jobs, one item each: `status`, `leaseUntil` and `cancelRequested` are plain
 * attributes so the coordinator's claim and a key's cancel are one conditional update each; the
 * record (its request holds up to 50 dev tasks with their tools) is gzip-compressed JSON, written
 * by an update that leaves `cancelRequested` as the API set it.
 */
export class DynamoPoolEvolutionStore implements PoolEvolutionStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  private item(record: PoolEvolutionRecord) {
    const parsed = PoolEvolutionRecord.parse(record);
    return { id: parsed.id, status: parsed.status, leaseUntil: parsed.leaseUntil ?? 0, body: gzipSync(Buffer.from(JSON.stringify(parsed))) };
  }

  async create(record: PoolEvolutionRecord): Promise<void> {
    try {
      await aws("create pool evolution", () =>
        this.doc.send(new PutCommand({ TableName: this.tables.PoolEvolutions, Item: this.item(record), ConditionExpression: "attribute_not_exists(id)" })),
      );
    } catch (err) {
      if (err instanceof ConflictError) throw new ConflictError(`pool evolution ${record.id} exists`);
      throw err;
    }
  }

  async get(id: string): Promise<PoolEvolutionRecord | undefined> {
    const out = await aws("get pool evolution", () => this.doc.send(new GetCommand({ TableName: this.tables.PoolEvolutions, Key: { id }, ConsistentRead: true })));
    if (!out.Item) return undefined;
    const record = PoolEvolutionRecord.parse(JSON.parse(gunzipSync(Buffer.from(out.Item.body as Uint8Array)).toString()));
    const status = PoolEvolutionRecord.shape.status.parse(out.Item.status);
    // A queued job cancelled by its key: its status and time are the item's (its body is as it was queued).
    const cancelled =
      status === "cancelled" && record.status === "queued"
        ? { updatedAt: Number(out.Item.cancelledAt) || record.updatedAt, progress: { ...record.progress, label: "cancelled" } }
        : {};
    return { ...record, ...cancelled, status, leaseUntil: Number(out.Item.leaseUntil) || undefined, ...(out.Item.cancelRequested === true ? { cancelRequested: true } : {}) };
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<PoolEvolutionRecord | undefined> {
    try {
      await aws("claim pool evolution", () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tables.PoolEvolutions,
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

  async save(record: PoolEvolutionRecord): Promise<void> {
    const { id: _id, ...item } = this.item(record);
    await aws("save pool evolution", () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.tables.PoolEvolutions,
          Key: { id: record.id },
          UpdateExpression: "SET #s = :s, leaseUntil = :l, body = :b",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":s": item.status, ":l": item.leaseUntil, ":b": item.body },
        }),
      ),
    );
  }

  async requestCancel(id: string, now: number): Promise<PoolEvolutionRecord | undefined> {
    const update = (expression: string, condition: string, values: Record<string, unknown>) =>
      aws("cancel pool evolution", () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tables.PoolEvolutions,
            Key: { id },
            UpdateExpression: expression,
            ConditionExpression: condition,
            ExpressionAttributeNames: { "#s": "status" },
            ExpressionAttributeValues: values,
          }),
        ),
      ).then(
        () => true,
        (err: unknown) => (err instanceof ConflictError ? false : Promise.reject(err)),
      );
    // Queued: cancelled at once. Running: marked to stop. Ended (or gone): left as it is.
    if (!(await update("SET #s = :c, cancelledAt = :now", "#s = :q", { ":c": "cancelled", ":q": "queued", ":now": now })))
      await update("SET cancelRequested = :t", "#s = :r", { ":t": true, ":r": "running" });
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    const out = await aws("read pool evolution cancel", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.PoolEvolutions, Key: { id }, ConsistentRead: true, ProjectionExpression: "cancelRequested" })),
    );
    return out.Item?.cancelRequested === true;
  }
}
