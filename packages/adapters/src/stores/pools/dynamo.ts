import { allItems } from "../../dynamo/paginate.ts";
import { GetCommand, PutCommand, ScanCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError, HarnessPool, parseOrThrow, type PoolStore } from "@harness-s/core";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/**
 * Pools as one item each (the spec JSON is far below DynamoDB's 400 KB limit); a conditional put
 * keeps them immutable.
 */
export class DynamoPoolStore implements PoolStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async put(pool: HarnessPool): Promise<void> {
    parseOrThrow(HarnessPool, pool, "pool"); // refused on write, never found unreadable on a later read
    try {
      await aws("put pool", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.Pools,
            Item: {
              id: pool.id,
              version: pool.version,
              siblings: pool.siblings.length,
              ...(pool.owner ? { owner: pool.owner } : {}),
              body: JSON.stringify(pool),
            },
            // Immutable with its owner: the same pool put again under another owner would take it from its key (or hide
            // a shared one).
            ConditionExpression: `attribute_not_exists(id) OR (version = :v AND ${pool.owner ? "#o = :o" : "attribute_not_exists(#o)"})`,
            ExpressionAttributeNames: { "#o": "owner" },
            ExpressionAttributeValues: { ":v": pool.version, ...(pool.owner ? { ":o": pool.owner } : {}) },
          }),
        ),
      );
    } catch (err) {
      if (err instanceof ConflictError)
        throw new ConflictError(`pool ${pool.id} already exists with another version or owner; pools are immutable`);
      throw err;
    }
  }

  async get(id: string): Promise<HarnessPool | undefined> {
    const out = await aws("get pool", () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Pools, Key: { id } })),
    );
    return out.Item ? HarnessPool.parse(JSON.parse(out.Item.body as string)) : undefined;
  }

  async list() {
    // A Scan stops at 1 MB a page: every page is read.
    const items = await allItems("list pools", (start) =>
      this.doc.send(
        new ScanCommand({
          TableName: this.tables.Pools,
          ProjectionExpression: "id, version, siblings, #o",
          ExpressionAttributeNames: { "#o": "owner" },
          ExclusiveStartKey: start,
        }),
      ),
    );
    return items
      .map((i) => ({
        id: String(i.id),
        version: String(i.version),
        siblings: Number(i.siblings),
        ...(i.owner ? { owner: String(i.owner) } : {}),
      }))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}
