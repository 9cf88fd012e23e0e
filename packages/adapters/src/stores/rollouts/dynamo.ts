import { gunzipSync } from "node:zlib";
import { allItems } from "../../dynamo/paginate.ts";
import { BatchGetCommand, GetCommand, QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Rollout, summaryOf, type RolloutStore, type RolloutSummary } from "@harness-s/core";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";
import { ROLLOUT_WRITES, partKey, type RolloutWrites } from "./dynamo-writes.ts";

export { CHUNK_BYTES, ROLLOUT_WRITES, type RolloutWrites } from "./dynamo-writes.ts";

/** A rollout from its gzip-compressed chunks, in order. */
const decode = (chunks: Buffer[]) => Rollout.parse(JSON.parse(gunzipSync(Buffer.concat(chunks)).toString()));

/**
 * Rollouts with their trajectories, gzip-compressed and split into chunks of CHUNK_BYTES; all
 * chunks of a rollout are written in one transaction (one chunk: one put), conditionally, so a
 * redelivered write is a no-op and a reader never sees half a rollout.
 */
export class DynamoRolloutStore implements RolloutStore {
  private readonly write: ReturnType<(typeof ROLLOUT_WRITES)[RolloutWrites]>;

  /** `writes`: each rollout put as it ends, or a rescue's grouped ({@link ROLLOUT_WRITES}). */
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    writes: RolloutWrites = "each",
  ) {
    this.write = ROLLOUT_WRITES[writes](doc, tables.Rollouts);
  }

  put(jobId: string, index: number, rollout: Rollout): Promise<"stored" | "duplicate"> {
    return this.write(jobId, { index, rollout });
  }

  async has(jobId: string, index: number): Promise<boolean> {
    const out = await aws("check rollout", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Rollouts, Key: { jobId, part: partKey(index, 0) } })),
    );
    return out.Item !== undefined;
  }

  async get(jobId: string, index: number): Promise<Rollout | undefined> {
    const first = await aws("get rollout", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Rollouts, Key: { jobId, part: partKey(index, 0) } })),
    );
    if (!first.Item) return undefined;
    const chunks = Number(first.Item.chunks);
    const data = [Buffer.from(first.Item.data as Uint8Array)];
    for (let c = 1; c < chunks; c++) {
      const out = await aws("get rollout chunk", () =>
        this.doc.send(new GetCommand({ TableName: this.tables.Rollouts, Key: { jobId, part: partKey(index, c) } })),
      );
      if (!out.Item) throw new Error(`rollout ${jobId}/${index} is missing chunk ${c} of ${chunks}`);
      data.push(Buffer.from(out.Item.data as Uint8Array));
    }
    return decode(data);
  }

  async getMany(jobId: string, indexes: readonly number[]): Promise<Map<number, Rollout>> {
    const found = new Map<number, Rollout>();
    for (let i = 0; i < indexes.length; i += 100) {
      const keys = indexes.slice(i, i + 100).map((index) => ({ jobId, part: partKey(index, 0) }));
      let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = {
        [this.tables.Rollouts]: { Keys: keys },
      };
      while (request && Object.keys(request).length) {
        const req: Record<string, { Keys: Record<string, unknown>[] }> = request;
        const out = await aws("get rollouts", () => this.doc.send(new BatchGetCommand({ RequestItems: req })));
        for (const item of out.Responses?.[this.tables.Rollouts] ?? []) {
          const index = Number(item.index);
          const rollout =
            Number(item.chunks) === 1 ? decode([Buffer.from(item.data as Uint8Array)]) : await this.get(jobId, index);
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
        new QueryCommand({
          TableName: this.tables.Rollouts,
          KeyConditionExpression: "jobId = :j",
          ExpressionAttributeValues: { ":j": jobId },
          ExclusiveStartKey: start,
        }),
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
