import { gunzipSync, gzipSync } from "node:zlib";
import { QueryCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError, PayloadTooLargeError } from "@harness-s/core";
import { EpisodeMeta, EpisodeStep, type GatewayEpisodeStore, type StoredEpisode } from "@harness-s/core/gateway";
import { aws, translateAwsError } from "../../errors.ts";
import { allItems } from "../../dynamo/paginate.ts";
import { CHUNK_BYTES } from "../rollouts/dynamo.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";

/** A transaction holds at most 100 items and 4 MB: a step or an opening takes at most this many chunks. */
const MAX_CHUNKS = 12;
const HOT = [
  "keyId",
  "id",
  "opening",
  "steps",
  "status",
  "lastUsed",
  "startedAt",
  "reward",
  "leaseUntil",
  "leaseHolder",
  "expiresAt",
] as const;

const pad = (n: number, width: number) => String(n).padStart(width, "0");
const prefix = (id: string) => `ep#${id}#`;
const metaKey = (id: string) => `${prefix(id)}m`;
const initKey = (id: string, c: number) => `${prefix(id)}i#${pad(c, 3)}`;
const stepKey = (id: string, n: number, c: number) => `${prefix(id)}s#${pad(n, 6)}#${pad(c, 3)}`;
const openingKey = (opening: string, startedAt: number, id: string) => `open#${opening}#${pad(startedAt, 15)}#${id}`;

/**
 * A value as gzip-compressed chunks; one that compresses past MAX_CHUNKS is refused (413: the conversation is too large
 * to keep).
 */
function chunks(value: unknown): Buffer[] {
  const zipped = gzipSync(Buffer.from(JSON.stringify(value)));
  const count = Math.max(1, Math.ceil(zipped.length / CHUNK_BYTES));
  if (count > MAX_CHUNKS) throw new PayloadTooLargeError(MAX_CHUNKS * CHUNK_BYTES);
  return Array.from({ length: count }, (_, c) => zipped.subarray(c * CHUNK_BYTES, (c + 1) * CHUNK_BYTES));
}
const decode = (parts: Record<string, unknown>[]) =>
  JSON.parse(gunzipSync(Buffer.concat(parts.map((p) => Buffer.from(p.data as Uint8Array)))).toString());
const cancelledByCondition = (err: unknown) =>
  (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons?.some(
    (r) => r.Code === "ConditionalCheckFailed",
  ) ?? false;

/**
 * Gateway episodes in one DynamoDB table, partitioned by API key (no key reads another's): per
 * episode a meta item (its step count, status, lease), its opening data and each step as
 * gzip-compressed chunks, and an index item per opening for continuing requests without the
 * episode header. A step is written with the meta's step count in one transaction, conditionally,
 * so two API containers never both write step `n`; every item expires with the episode (TTL).
 */
export class DynamoGatewayEpisodeStore implements GatewayEpisodeStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  private get table(): string {
    return this.tables.GatewayEpisodes;
  }

  async create(meta: EpisodeMeta, first: EpisodeStep): Promise<boolean> {
    const { keyId, id, expiresAt } = meta;
    const hot = Object.fromEntries(HOT.filter((k) => meta[k] !== undefined).map((k) => [k, meta[k]]));
    const init = chunks(meta);
    const step = chunks(first);
    const put = (sk: string, rest: Record<string, unknown>, condition = false) => ({
      Put: {
        TableName: this.table,
        Item: { keyId, sk, expiresAt, ...rest },
        ...(condition ? { ConditionExpression: "attribute_not_exists(sk)" } : {}),
      },
    });
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            put(metaKey(id), { ...hot, chunks: init.length }, true),
            ...init.map((data, c) => put(initKey(id, c), { data })),
            ...step.map((data, c) => put(stepKey(id, 0, c), { data, chunks: step.length })),
            put(openingKey(meta.opening, meta.startedAt, id), { episode: id }),
          ],
        }),
      );
      return true;
    } catch (err) {
      if (cancelledByCondition(err)) return false;
      throw translateAwsError(err, "store gateway episode");
    }
  }

  async load(keyId: string, id: string): Promise<StoredEpisode | undefined> {
    const items = await allItems("load gateway episode", (start) =>
      this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: "keyId = :k AND begins_with(sk, :p)",
          ExpressionAttributeValues: { ":k": keyId, ":p": prefix(id) },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      ),
    );
    const head = items.find((i) => i.sk === metaKey(id));
    if (!head) return undefined;
    const steps = new Map<number, Record<string, unknown>[]>();
    for (const item of items.filter((i) => String(i.sk).startsWith(`${prefix(id)}s#`))) {
      const n = Number(String(item.sk).split("#").at(-2));
      steps.set(n, [...(steps.get(n) ?? []), item]);
    }
    const hot = Object.fromEntries(HOT.filter((k) => head[k] !== undefined).map((k) => [k, head[k]]));
    const meta = EpisodeMeta.parse({
      ...decode(items.filter((i) => String(i.sk).startsWith(`${prefix(id)}i#`))),
      ...hot,
      leaseHolder: head.leaseHolder ?? undefined,
    });
    // Steps past the meta's count cannot exist (written with it); a torn read would be a bug here, not the caller's.
    const ordered = Array.from({ length: meta.steps }, (_, n) => {
      const parts = steps.get(n);
      if (!parts) throw new ConflictError(`gateway episode ${id} is missing step ${n} of ${meta.steps}`);
      return EpisodeStep.parse(decode(parts));
    });
    return { meta, steps: ordered };
  }

  async withOpening(keyId: string, opening: string, limit: number): Promise<StoredEpisode[]> {
    const out = await aws("find gateway episodes", () =>
      this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: "keyId = :k AND begins_with(sk, :p)",
          ExpressionAttributeValues: { ":k": keyId, ":p": `open#${opening}#` },
          ScanIndexForward: false,
          Limit: limit,
        }),
      ),
    );
    const found = await Promise.all((out.Items ?? []).map((i) => this.load(keyId, String(i.episode))));
    return found.filter((e): e is StoredEpisode => e !== undefined);
  }

  async lease(
    keyId: string,
    id: string,
    holder: string,
    now: number,
    until: number,
  ): Promise<{ steps: number } | undefined> {
    try {
      const out = await aws("lease gateway episode", () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { keyId, sk: metaKey(id) },
            UpdateExpression: "SET leaseUntil = :until, leaseHolder = :h",
            ConditionExpression: "attribute_exists(sk) AND (leaseUntil <= :now OR leaseHolder = :h)",
            ExpressionAttributeValues: { ":until": until, ":h": holder, ":now": now },
            ReturnValues: "ALL_NEW",
          }),
        ),
      );
      return { steps: Number(out.Attributes?.steps) };
    } catch (err) {
      if (err instanceof ConflictError) return undefined;
      throw err;
    }
  }

  async append(
    keyId: string,
    id: string,
    step: EpisodeStep,
    change: Pick<EpisodeMeta, "status" | "lastUsed" | "expiresAt">,
  ): Promise<boolean> {
    const parts = chunks(step);
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.table,
                Key: { keyId, sk: metaKey(id) },
                UpdateExpression:
                  "SET steps = :next, #status = :status, lastUsed = :used, leaseUntil = :zero REMOVE leaseHolder",
                ConditionExpression: "steps = :n",
                ExpressionAttributeNames: { "#status": "status" },
                ExpressionAttributeValues: {
                  ":next": step.n + 1,
                  ":n": step.n,
                  ":status": change.status,
                  ":used": change.lastUsed,
                  ":zero": 0,
                },
              },
            },
            ...parts.map((data, c) => ({
              Put: {
                TableName: this.table,
                Item: { keyId, sk: stepKey(id, step.n, c), data, chunks: parts.length, expiresAt: change.expiresAt },
                ConditionExpression: "attribute_not_exists(sk)",
              },
            })),
          ],
        }),
      );
      return true;
    } catch (err) {
      if (cancelledByCondition(err)) return false;
      throw translateAwsError(err, "store gateway episode step");
    }
  }

  async release(keyId: string, id: string, holder: string): Promise<void> {
    try {
      await aws("release gateway episode", () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: { keyId, sk: metaKey(id) },
            UpdateExpression: "SET leaseUntil = :zero REMOVE leaseHolder",
            ConditionExpression: "leaseHolder = :h",
            ExpressionAttributeValues: { ":zero": 0, ":h": holder },
          }),
        ),
      );
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }

  async update(
    keyId: string,
    id: string,
    change: Partial<Pick<EpisodeMeta, "reward" | "status">>,
  ): Promise<EpisodeMeta | undefined> {
    const fields = Object.entries(change).filter(([, v]) => v !== undefined);
    if (fields.length) {
      try {
        await aws("update gateway episode", () =>
          this.doc.send(
            new UpdateCommand({
              TableName: this.table,
              Key: { keyId, sk: metaKey(id) },
              UpdateExpression: `SET ${fields.map((_, i) => `#f${i} = :v${i}`).join(", ")}`,
              ConditionExpression: "attribute_exists(sk)",
              ExpressionAttributeNames: Object.fromEntries(fields.map(([k], i) => [`#f${i}`, k])),
              ExpressionAttributeValues: Object.fromEntries(fields.map(([, v], i) => [`:v${i}`, v])),
            }),
          ),
        );
      } catch (err) {
        if (err instanceof ConflictError) return undefined;
        throw err;
      }
    }
    return (await this.load(keyId, id))?.meta;
  }
}
