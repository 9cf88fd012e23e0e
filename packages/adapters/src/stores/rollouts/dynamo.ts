import { gunzipSync, gzipSync } from "node:zlib";
import { allItems } from "../../dynamo/paginate.ts";
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Rollout, summaryOf, type RolloutStore, type RolloutSummary } from "@harness-s/core";
import { aws, translateAwsError } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";

/** Bytes of compressed payload per item: well below DynamoDB's 400 KB item limit. */
export const CHUNK_BYTES = 300 * 1024;
const partKey = (index: number, chunk: number) => `${String(index).padStart(6, "0")}#${String(chunk).padStart(3, "0")}`;

/** A rollout from its gzip-compressed chunks, in order. */
const decode = (chunks: Buffer[]) => Rollout.parse(JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()));

/** One transaction writes at most 100 items, so a rollout may take up to this many chunks. */
const MAX_CHUNKS = 100;

/**
 * Rollouts with their trajectories, gzip-compressed and split into chunks of CHUNK_BYTES; all
 * chunks of a rollout are written in one transaction (one chunk: one put), conditionally, so a
 * redelivered write is a no-op and a reader never sees half a rollout.
 */
export class DynamoRolloutStore implements RolloutStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate"> {
    const zipped = gzipSync(Buffer.from(JSON.stringify(Rollout.parse(rollout))));
    const count = Math.max(1, Math.ceil(zipped.length / CHUNK_BYTES));
    if (count > MAX_CHUNKS) throw new Error(`rollout ${jobId}/${index} is ${zipped.length} bytes compressed; the limit is ${MAX_CHUNKS * CHUNK_BYTES}`);
    // The first chunk carries the rollout's summary: a status read lists summaries without the trajectories.
    const summary = summaryOf(index, rollout);
    const items = Array.from({ length: count }, (_, chunk) => ({
      TableName: this.tables.Rollouts,
      Item: {
        jobId,
        part: partKey(index, chunk),
        index,
        chunk,
        chunks: count,
        data: zipped.subarray(chunk * CHUNK_BYTES, (chunk + 1) * CHUNK_BYTES),
        ...(chunk === 0 ? { summary } : {}),
      },
      ConditionExpression: "attribute_not_exists(part)",
    }));
    try {
      // One chunk is one conditional put: a transaction would bill its write units twice.
      if (count === 1) await this.doc.send(new PutCommand(items[0]!));
      else await this.doc.send(new TransactWriteCommand({ TransactItems: items.map((Put) => ({ Put })) }));
      return "stored";
    } catch (err) {
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if ((err as Error)?.name === "ConditionalCheckFailedException" || reasons?.some((r) => r.Code === "ConditionalCheckFailed")) return "duplicate";
      throw translateAwsError(err, "store rollout");
    }
  }

  async has(jobId: string, index: number): Promise<boolean> {
    const out = await aws("check rollout", () => this.doc.send(new GetCommand({ TableName: this.tables.Rollouts, Key: { jobId, part: partKey(index, 0) } })));
    return out.Item !== undefined;
  }

  async get(jobId: string, index: number): Promise<Rollout | undefined> {
    const first = await aws("get rollout", () => this.doc.send(new GetCommand({ TableName: this.tables.Rollouts, Key: { jobId, part: partKey(index, 0) } })));
    if (!first.Item) return undefined;
    const chunks = Number(first.Item.chunks);
    const data = [Buffer.from(first.Item.data as Uint8Array)];
    for (let c = 1; c < chunks; c++) {
      const out = await aws("get rollout chunk", () => this.doc.send(new GetCommand({ TableName: this.tables.Rollouts, Key: { jobId, part: partKey(index, c) } })));
      if (!out.Item) throw new Error(`rollout ${jobId}/${index} is missing chunk ${c} of ${chunks}`);
      data.push(Buffer.from(out.Item.data as Uint8Array));
    }
    return decode(data);
  }

  async getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>> {
    const found = new Map<number, Rollout>();
    for (let i = 0; i < indexes.length; i += 100) {
      const keys = indexes.slice(i, i + 100).map((index) => ({ jobId, part: partKey(index, 0) }));
      let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = { [this.tables.Rollouts]: { Keys: keys } };
      while (request && Object.keys(request).length) {
        const req: Record<string, { Keys: Record<string, unknown>[] }> = request;
        const out = await aws("get rollouts", () => this.doc.send(new BatchGetCommand({ RequestItems: req })));
        for (const item of out.Responses?.[this.tables.Rollouts] ?? []) {
          const index = Number(item.index);
          const rollout = Number(item.chunks) === 1 ? decode([Buffer.from(item.data as Uint8Array)]) : await this.get(jobId, index);
          if (rollout) found.set(index, rollout);
        }
        request = out.UnprocessedKeys as typeof request;
      }
    }
    return found;
  }

  async list(jobId: string): Promise<{ index: number; rollout: Rollout }[]> {
    const parts = new Map<number, { chunks: number; data: Buffer[] }>();
    const items = await allItems("list rollouts", (start) =>
      this.doc.send(
        new QueryCommand({ TableName: this.tables.Rollouts, KeyConditionExpression: "jobId = :j", ExpressionAttributeValues: { ":j": jobId }, ExclusiveStartKey: start }),
      ),
    );
    for (const item of items) {
      const entry = parts.get(Number(item.index)) ?? { chunks: Number(item.chunks), data: [] };
      entry.data[Number(item.chunk)] = Buffer.from(item.data as Uint8Array);
      parts.set(Number(item.index), entry);
    }
    return [...parts.entries()]
      .filter(([, p]) => p.data.filter(Boolean).length === p.chunks)
      .sort((a, b) => a[0] - b[0])
      .map(([index, p]) => ({ index, rollout: decode(p.data) }));
  }

  /** The first chunks' summaries, without their data (a rollout stored before summaries were kept is read whole). */
  async summaries(jobId: string): Promise<RolloutSummary[]> {
    const items = await allItems("list rollout summaries", (start) =>
      this.doc.send(
        new QueryCommand({
          TableName: this.tables.Rollouts,
          KeyConditionExpression: "jobId = :j",
          ProjectionExpression: "#i, #c, #s",
          ExpressionAttributeNames: { "#i": "index", "#c": "chunk", "#s": "summary" },
          ExpressionAttributeValues: { ":j": jobId },
          ExclusiveStartKey: start,
        }),
      ),
    );
    const firsts = items.filter((item) => Number(item.chunk) === 0).sort((a, b) => Number(a.index) - Number(b.index));
    const out: RolloutSummary[] = [];
    for (const item of firsts) {
      const index = Number(item.index);
      const kept = item.summary as RolloutSummary | undefined;
      const whole = kept ? undefined : await this.get(jobId, index);
      if (kept) out.push({ ...kept, index });
      else if (whole) out.push(summaryOf(index, whole));
    }
    return out;
  }
}
