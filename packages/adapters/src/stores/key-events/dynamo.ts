import { randomUUID } from "node:crypto";
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { KeyEvent, type KeyEventLog } from "@harness-s/core/access";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** Each key's events on `KeyEvents`: sort key `<ms, 15 digits>#<uuid>`, so a key's events read newest first. */
export class DynamoKeyEventLog implements KeyEventLog {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async append(event: KeyEvent): Promise<void> {
    const item = { ...KeyEvent.parse(event), sk: `${String(event.at).padStart(15, "0")}#${randomUUID()}` };
    await aws("record key event", () => this.doc.send(new PutCommand({ TableName: this.tables.KeyEvents, Item: item })));
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
