import { allItems } from "../../dynamo/paginate.ts";
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import { ExperimentStep, selectSteps, type ExperimentStepStore } from "@harness-s/core/experiment";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";

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
