import { QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { KeyPage, KeyPageRequest } from "@harness-s/core";
import { aws } from "../errors.ts";
import { BY_KEY_INDEX } from "./table-specs.ts";

/**
 * One page of key `keyId`'s items in `table` through {@link BY_KEY_INDEX}, newest first, after the
 * position `page.after`: asks for one item more than the page to know whether another follows
 * (a Query page that stops at 1 MB is followed on).
 */
export async function queryByKey(
  doc: DynamoDBDocumentClient,
  table: string,
  what: string,
  keyId: string,
  page: KeyPageRequest,
): Promise<KeyPage<Record<string, unknown>>> {
  const { name, partitionKey, sortKey } = BY_KEY_INDEX;
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await aws(what, () =>
      doc.send(
        new QueryCommand({
          TableName: table,
          IndexName: name,
          KeyConditionExpression: page.after === undefined ? "#k = :k" : "#k = :k AND #at < :after",
          ExpressionAttributeNames: { "#k": partitionKey, ...(page.after === undefined ? {} : { "#at": sortKey }) },
          ExpressionAttributeValues: { ":k": keyId, ...(page.after === undefined ? {} : { ":after": page.after }) },
          ScanIndexForward: false,
          Limit: page.limit + 1 - items.length,
          ExclusiveStartKey: start,
        }),
      ),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start && items.length <= page.limit);
  const kept = items.slice(0, page.limit);
  return { items: kept, ...(items.length > page.limit ? { next: String(kept[kept.length - 1]![sortKey]) } : {}) };
}
