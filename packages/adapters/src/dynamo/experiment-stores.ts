import { gunzipSync, gzipSync } from "node:zlib";
import { allItems } from "./paginate.ts";
import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Ballot, type BallotStore } from "@harness-s/core/voting";
import { ConflictError } from "@harness-s/core";
import { ExperimentRecord, ExperimentStep, selectSteps, type ExperimentStepStore, type ExperimentStore } from "@harness-s/core/experiment";
import { aws } from "../errors.ts";
import type { TableNames } from "./table-specs.ts";

/** Ballots keyed (ballotKey, voterId); a conditional put makes the first ballot win. */
export class DynamoBallotStore implements BallotStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly ttlSeconds = 7 * 24 * 3600,
  ) {}

  async put(ballotKey: string, ballot: Ballot): Promise<"stored" | "duplicate"> {
    try {
      await aws("put ballot", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.Ballots,
            Item: { ballotKey, voterId: ballot.voterId, body: JSON.stringify(Ballot.parse(ballot)), expiresAt: Math.floor(Date.now() / 1000) + this.ttlSeconds },
            ConditionExpression: "attribute_not_exists(voterId)",
          }),
        ),
      );
      return "stored";
    } catch (err) {
      if (err instanceof ConflictError) return "duplicate";
      throw err;
    }
  }

  async get(ballotKey: string, voterId: string): Promise<Ballot | undefined> {
    const out = await aws("get ballot", () => this.doc.send(new GetCommand({ TableName: this.tables.Ballots, Key: { ballotKey, voterId }, ConsistentRead: true })));
    return out.Item ? Ballot.parse(JSON.parse(out.Item.body as string)) : undefined;
  }
}

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
    return { id: parsed.id, status: parsed.status, leaseUntil: parsed.leaseUntil ?? 0, body: gzipSync(Buffer.from(JSON.stringify(parsed))) };
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
    if (!out.Item) return undefined;
    const record = ExperimentRecord.parse(JSON.parse(gunzipSync(Buffer.from(out.Item.body as Uint8Array)).toString()));
    return {
      ...record,
      status: ExperimentRecord.shape.status.parse(out.Item.status),
      leaseUntil: Number(out.Item.leaseUntil) || undefined,
      ...(out.Item.cancelRequested === true ? { cancelRequested: true } : {}),
    };
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

/** Sort-key prefix of a seed's steps, or of one arm's within it: `000001#` / `000001#grpo#`. */
function stepKeyPrefix(seed: number, arm?: string): string {
  return `${String(seed).padStart(6, "0")}#${arm === undefined ? "" : `${arm}#`}`;
}

/** Step records under their run, sorted by seed, arm and step; the first write of a step wins. */
export class DynamoExperimentStepStore implements ExperimentStepStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(step: ExperimentStep): Promise<void> {
    const parsed = ExperimentStep.parse(step);
    const key = `${stepKeyPrefix(parsed.seed, parsed.arm)}${String(parsed.step).padStart(6, "0")}`;
    try {
      await aws("put experiment step", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.ExperimentSteps,
            Item: { experimentId: parsed.experimentId, key, body: JSON.stringify(parsed) },
            ConditionExpression: "attribute_not_exists(#k)",
            ExpressionAttributeNames: { "#k": "key" },
          }),
        ),
      );
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }

  async list(experimentId: string, filter: { arm?: string; seed?: number } = {}): Promise<ExperimentStep[]> {
    const prefix = filter.seed === undefined ? undefined : stepKeyPrefix(filter.seed, filter.arm);
    const items = await allItems("list experiment steps", (start) =>
      this.doc.send(
        new QueryCommand({
          TableName: this.tables.ExperimentSteps,
          KeyConditionExpression: prefix ? "experimentId = :e AND begins_with(#k, :p)" : "experimentId = :e",
          ...(prefix ? { ExpressionAttributeNames: { "#k": "key" } } : {}),
          ExpressionAttributeValues: { ":e": experimentId, ...(prefix ? { ":p": prefix } : {}) },
          ExclusiveStartKey: start,
        }),
      ),
    );
    const out = items.map((item) => ExperimentStep.parse(JSON.parse(item.body as string)));
    return selectSteps(out, filter);
  }
}
