import { gunzipSync, gzipSync } from "node:zlib";
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import { PoolEvolutionRecord, type PoolEvolutionStore } from "@harness-s/core/pools";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";

/**
 * Pool evolution jobs, one item each: `status` and `leaseUntil` are plain attributes so the
 * coordinator's claim is one conditional update; the record (its request holds up to 50 dev
 * tasks with their tools) is gzip-compressed JSON.
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
    return { ...record, status: PoolEvolutionRecord.shape.status.parse(out.Item.status), leaseUntil: Number(out.Item.leaseUntil) || undefined };
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
    await aws("save pool evolution", () => this.doc.send(new PutCommand({ TableName: this.tables.PoolEvolutions, Item: this.item(record) })));
  }
}
