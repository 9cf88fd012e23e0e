import type { QueryCommandOutput, ScanCommandOutput } from "@aws-sdk/lib-dynamodb";
import { ValidationError } from "@harness-s/core";
import { aws } from "../errors.ts";

type Page = Pick<QueryCommandOutput | ScanCommandOutput, "Items" | "LastEvaluatedKey">;

/**
 * Every item of a Query or Scan, page after page (DynamoDB stops a page at 1 MB), with SDK
 * errors translated. `page(start)` sends the command with `ExclusiveStartKey: start`.
 *
 * @example
 * const items = await allItems("list pools", (start) => doc.send(new ScanCommand({ TableName, ExclusiveStartKey: start })));
 */
export async function allItems(
  what: string,
  page: (start: Record<string, unknown> | undefined) => Promise<Page>,
  max = Number.POSITIVE_INFINITY,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await aws(what, () => page(start));
    for (const item of out.Items ?? []) items.push(item);
    if (items.length > max)
      throw new ValidationError(what, [`more than ${max} items: ask for less (a shorter period)`]);
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}
