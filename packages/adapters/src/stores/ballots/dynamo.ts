import { GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Ballot, type BallotStore } from "@harness-s/core/voting";
import { ConflictError } from "@harness-s/core";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/table-specs.ts";

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
            Item: {
              ballotKey,
              voterId: ballot.voterId,
              body: JSON.stringify(Ballot.parse(ballot)),
              expiresAt: Math.floor(Date.now() / 1000) + this.ttlSeconds,
            },
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
    const out = await aws("get ballot", () =>
      this.doc.send(
        new GetCommand({ TableName: this.tables.Ballots, Key: { ballotKey, voterId }, ConsistentRead: true }),
      ),
    );
    return out.Item ? Ballot.parse(JSON.parse(out.Item.body as string)) : undefined;
  }
}
