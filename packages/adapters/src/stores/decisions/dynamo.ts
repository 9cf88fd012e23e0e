import { GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import { RoutingDecision } from "@harness-s/core/voting";
import type { DecisionStore } from "@harness-s/core/routing";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

export class DynamoDecisionStore implements DecisionStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly ttlSeconds?: number,
    private readonly now: () => number = Date.now,
  ) {}

  async put(decision: RoutingDecision): Promise<void> {
    const item: Record<string, unknown> = { id: decision.id, body: JSON.stringify(decision) };
    if (this.ttlSeconds) item.expiresAt = Math.floor(this.now() / 1000) + this.ttlSeconds;
    try {
      await aws("put decision", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.Decisions,
            Item: item,
            ConditionExpression: "attribute_not_exists(id)",
          }),
        ),
      );
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }

  async get(id: string): Promise<RoutingDecision | undefined> {
    const out = await aws("get decision", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Decisions, Key: { id } })),
    );
    return out.Item ? RoutingDecision.parse(JSON.parse(out.Item.body as string)) : undefined;
  }
}
