import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { KeyEvent, type KeyEventLog } from "@harness-s/core/access";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/**
 * Each key's events on `KeyEvents`: sort key the version each wrote (10 digits), so a key's events read newest first
 * and a retried one is written once.
 */
export class DynamoKeyEventLog implements KeyEventLog {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async append(event: KeyEvent): Promise<void> {
    const item = { ...KeyEvent.parse(event), sk: String(event.version).padStart(10, "0") };
    await aws("record key event", () =>
      this.doc.send(new PutCommand({ TableName: this.tables.KeyEvents, Item: item })),
    );
  }

  async list(keyId: string, limit: number): Promise<KeyEvent[]> {
    const out = await aws("read key events", () =>
      this.doc.send(
        new QueryCommand({
          TableName: this.tables.KeyEvents,
          KeyConditionExpression: "keyId = :k",
          ExpressionAttributeValues: { ":k": keyId },
          ScanIndexForward: false,
          Limit: limit,
        }),
      ),
    );
    return (out.Items ?? []).map(({ sk: _sk, ...e }) => KeyEvent.parse(e));
  }
}
