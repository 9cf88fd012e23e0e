import { gunzipSync, gzipSync } from "node:zlib";
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError, type LeasedJob, type LeasedJobStore } from "@harness-s/core";
import type { z } from "zod";
import { aws } from "../../errors.ts";

/**
 * Leased jobs on one table, one item each (experiments, pool evolutions): `status`, `leaseUntil`,
 * `cancelRequested` and `cancelledAt` are plain attributes, so a claim and a key's cancel are one
 * conditional update each; the record is gzip-compressed JSON (it grows with results, or holds
 * up to 50 dev tasks), written by an update that leaves the cancel as the API set it. `extra`
 * adds attributes written once at create (a key's list: its index keys).
 */
export class DynamoLeasedJobs<R extends LeasedJob> implements LeasedJobStore<R> {
  constructor(
    protected readonly doc: DynamoDBDocumentClient,
    protected readonly table: string,
    private readonly schema: z.ZodType<R>,
    private readonly what: string,
    private readonly extra: (record: R) => Record<string, unknown> = () => ({}),
  ) {}

  private item(record: R) {
    const parsed = this.schema.parse(record);
    return {
      id: parsed.id,
      status: parsed.status,
      leaseUntil: parsed.leaseUntil ?? 0,
      ...this.extra(parsed),
      body: gzipSync(Buffer.from(JSON.stringify(parsed))),
    };
  }

  async create(record: R): Promise<void> {
    try {
      await aws(`create ${this.what}`, () =>
        this.doc.send(
          new PutCommand({
            TableName: this.table,
            Item: this.item(record),
            ConditionExpression: "attribute_not_exists(id)",
          }),
        ),
      );
    } catch (err) {
      if (err instanceof ConflictError) throw new ConflictError(`${this.what} ${record.id} exists`);
      throw err;
    }
  }

  async get(id: string): Promise<R | undefined> {
    const out = await aws(`get ${this.what}`, () =>
      this.doc.send(new GetCommand({ TableName: this.table, Key: { id }, ConsistentRead: true })),
    );
    return out.Item ? this.recordOf(out.Item) : undefined;
  }

  async claim(id: string, now: number, leaseUntil: number): Promise<R | undefined> {
    const claimed = await this.conditional(
      `claim ${this.what}`,
      id,
      "SET #s = :running, leaseUntil = :lease",
      "attribute_exists(id) AND (#s = :queued OR (#s = :running AND leaseUntil < :now))",
      { ":running": "running", ":queued": "queued", ":lease": leaseUntil, ":now": now },
    );
    return claimed ? this.get(id) : undefined;
  }

  async save(record: R): Promise<void> {
    const { status, leaseUntil, body } = this.item(record);
    await aws(`save ${this.what}`, () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id: record.id },
          UpdateExpression: "SET #s = :s, leaseUntil = :l, body = :b",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":s": status, ":l": leaseUntil, ":b": body },
        }),
      ),
    );
  }

  async requestCancel(id: string, now: number): Promise<R | undefined> {
    // Queued: cancelled at once. Running: marked to stop. Ended (or gone): left as it is.
    const queued = await this.conditional(
      `cancel ${this.what}`,
      id,
      "SET #s = :c, cancelRequested = :t, leaseUntil = :zero, cancelledAt = :now",
      "#s = :q",
      {
        ":c": "cancelled",
        ":t": true,
        ":zero": 0,
        ":now": now,
        ":q": "queued",
      },
    );
    if (!queued)
      await this.conditional(`cancel ${this.what}`, id, "SET cancelRequested = :t", "#s = :r", {
        ":t": true,
        ":r": "running",
      });
    return this.get(id);
  }

  async cancelRequested(id: string): Promise<boolean> {
    const out = await aws(`read ${this.what} cancel`, () =>
      this.doc.send(
        new GetCommand({
          TableName: this.table,
          Key: { id },
          ConsistentRead: true,
          ProjectionExpression: "cancelRequested",
        }),
      ),
    );
    return out.Item?.cancelRequested === true;
  }

  /** One conditional update: whether its condition held. */
  private conditional(
    what: string,
    id: string,
    update: string,
    condition: string,
    values: Record<string, unknown>,
  ): Promise<boolean> {
    return aws(what, () =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { id },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: values,
        }),
      ),
    ).then(
      () => true,
      (err: unknown) => (err instanceof ConflictError ? false : Promise.reject(err)),
    );
  }

  /**
   * A stored item's record: the body with the attributes written apart (state, lease, cancel; a job cancelled while
   * queued reads as cancelled then).
   */
  protected recordOf(item: Record<string, unknown>): R {
    const record = this.schema.parse(JSON.parse(gunzipSync(Buffer.from(item.body as Uint8Array)).toString()));
    const status = String(item.status);
    const cancelledQueued = status === "cancelled" && record.status === "queued";
    return {
      ...record,
      ...(cancelledQueued
        ? {
            updatedAt: Number(item.cancelledAt) || record.updatedAt,
            progress: { ...record.progress, label: "cancelled" },
          }
        : {}),
      status,
      leaseUntil: Number(item.leaseUntil) || undefined,
      ...(item.cancelRequested === true ? { cancelRequested: true } : {}),
    };
  }
}
