import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError, type KeyPage, type KeyPageRequest, listPosition } from "@harness-s/core";
import { RescueJob, type RescueJobStore } from "@harness-s/core/rescue";
import { SlotFailure } from "@harness-s/core/dispatch";
import type { RolloutSpend } from "@harness-s/core/callers";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";
import { queryByKey } from "../../dynamo/by-key.ts";

export class DynamoRescueJobStore implements RescueJobStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async create(job: RescueJob): Promise<void> {
    await aws("create rescue", () =>
      this.doc.send(
        new PutCommand({
          TableName: this.tables.RescueJobs,
          Item: itemOf(RescueJob.parse(job)),
          ConditionExpression: "attribute_not_exists(id)",
        }),
      ),
    );
  }

  /** The key's rescues through BY_KEY_INDEX (eventually consistent: one just started may show a moment later). */
  async listByKey(keyId: string, page: KeyPageRequest): Promise<KeyPage<RescueJob>> {
    const found = await queryByKey(this.doc, this.tables.RescueJobs, "list rescues", keyId, page);
    return { ...found, items: found.items.map((item) => RescueJob.parse(item)) };
  }

  async get(id: string): Promise<RescueJob | undefined> {
    const out = await aws("get rescue", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.RescueJobs, Key: { id }, ConsistentRead: true })),
    );
    return out.Item ? RescueJob.parse(out.Item) : undefined;
  }

  async recordFailure(id: string, index: number, failure: SlotFailure): Promise<void> {
    await this.updateIfExists(
      "record rescue failure",
      id,
      "SET failures = list_append(if_not_exists(failures, :none), :f)",
      {
        ":none": [],
        ":f": [{ index, ...SlotFailure.parse(failure) }],
      },
    );
  }

  async cancel(id: string, at: number): Promise<void> {
    await this.updateIfExists("cancel rescue", id, "SET cancelledAt = if_not_exists(cancelledAt, :at)", { ":at": at });
  }

  /** With `slot`: the slot joins `spentSlots` in the same write, which is refused when it is there already. */
  async addSpend(id: string, spend: RolloutSpend, slot?: number): Promise<void> {
    const values = { ":t": spend.policyTokens, ":p": spend.policyMs, ":ms": spend.environmentMs };
    const add = "ADD spentPolicyTokens :t, spentPolicyMs :p, spentEnvironmentMs :ms";
    if (slot === undefined) return this.updateIfExists("add rescue spend", id, add, values);
    await this.updateIfExists(
      "add rescue spend",
      id,
      `${add}, spentSlots :slots`,
      { ...values, ":slots": new Set([slot]), ":slot": slot },
      "NOT contains(spentSlots, :slot)",
    );
  }

  /** One UpdateItem on an existing job; an unknown job is left alone (no item is created). */
  private async updateIfExists(
    what: string,
    id: string,
    update: string,
    values: Record<string, unknown>,
    condition?: string,
  ): Promise<void> {
    try {
      await aws(what, () =>
        this.doc.send(
          new UpdateCommand({
            TableName: this.tables.RescueJobs,
            Key: { id },
            UpdateExpression: update,
            ConditionExpression: condition ? `attribute_exists(id) AND ${condition}` : "attribute_exists(id)",
            ExpressionAttributeValues: values,
          }),
        ),
      );
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}

/**
 * The job as stored: with its place in its key's list (BY_KEY_INDEX) when a key started it (`listAt` is dropped on
 * read).
 */
const itemOf = (job: RescueJob) =>
  job.keyId === undefined ? job : { ...job, listAt: listPosition(job.createdAt, job.id) };
