import { allItems } from "./paginate.ts";
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError, emptyProfile, repairProfile, type Profile, type ProfileLedger, type ProfileSet, type ProfileStore } from "@harness-s/core";
import { aws, translateAwsError } from "../errors.ts";
import type { TableNames } from "./tables.ts";

/**
 * Profiles, one item per (pool, harness) with a revision number for optimistic concurrency. A
 * stored profile that no longer parses (left by a write before names were guarded: NaN counts
 * stored as null) is repaired on read ({@link repairProfile}) and logged; the next evidence
 * applied to that harness writes the repaired profile back.
 */
export class DynamoProfileStore implements ProfileStore, ProfileLedger {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly log: (line: string) => void = (line) => console.warn(line),
  ) {}

  private decode(item: Record<string, unknown>): Profile {
    const harnessId = String(item.harnessId);
    const { profile, dropped } = repairProfile(JSON.parse(item.body as string), harnessId);
    if (dropped.length) this.log(`profile ${String(item.poolId)}/${harnessId}: repaired on read, dropped ${dropped.join(", ")}`);
    return profile;
  }

  async get(poolId: string): Promise<ProfileSet> {
    const set: ProfileSet = {};
    const items = await allItems("get profiles", (start) =>
      this.doc.send(
        new QueryCommand({ TableName: this.tables.Profiles, KeyConditionExpression: "poolId = :p", ExpressionAttributeValues: { ":p": poolId }, ExclusiveStartKey: start }),
      ),
    );
    for (const item of items) {
      const profile = this.decode(item);
      Object.defineProperty(set, profile.harnessId, { value: profile, enumerable: true, writable: true, configurable: true });
    }
    return set;
  }

  async put(poolId: string, profile: Profile): Promise<void> {
    const current = await this.read(poolId, profile.harnessId);
    await aws("put profile", () =>
      this.doc.send(
        new PutCommand({
          TableName: this.tables.Profiles,
          Item: { poolId, harnessId: profile.harnessId, policyVersion: profile.policyVersion, rev: (current?.rev ?? 0) + 1, body: JSON.stringify(profile) },
        }),
      ),
    );
  }

  /**
   * Claims the message id and writes the next profile revision in one transaction; a claimed id
   * means a duplicate delivery, a moved revision means a concurrent writer (read again, retry).
   */
  async applyOnce(messageId: string, poolId: string, harnessId: string, update: (current: Profile) => Profile): Promise<"applied" | "duplicate"> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const current = await this.read(poolId, harnessId);
      const next = update(current?.profile ?? emptyProfile(harnessId, 0));
      const rev = current?.rev ?? 0;
      try {
        await this.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: this.tables.Processed,
                  Item: { id: messageId, expiresAt: Math.floor(Date.now() / 1000) + 7 * 24 * 3600 },
                  ConditionExpression: "attribute_not_exists(id)",
                },
              },
              {
                Put: {
                  TableName: this.tables.Profiles,
                  Item: { poolId, harnessId, policyVersion: next.policyVersion, rev: rev + 1, body: JSON.stringify(next) },
                  ConditionExpression: rev === 0 ? "attribute_not_exists(poolId)" : "rev = :rev",
                  ExpressionAttributeValues: rev === 0 ? undefined : { ":rev": rev },
                },
              },
            ],
          }),
        );
        return "applied";
      } catch (err) {
        const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
        if (reasons?.[0]?.Code === "ConditionalCheckFailed") return "duplicate";
        if (reasons?.[1]?.Code === "ConditionalCheckFailed") continue;
        throw translateAwsError(err, "apply profile evidence");
      }
    }
    throw new ConflictError(`profile ${poolId}/${harnessId} kept changing under concurrent writers`);
  }

  private async read(poolId: string, harnessId: string): Promise<{ profile: Profile; rev: number } | undefined> {
    const out = await aws("get profile", () => this.doc.send(new GetCommand({ TableName: this.tables.Profiles, Key: { poolId, harnessId } })));
    return out.Item ? { profile: this.decode(out.Item), rev: Number(out.Item.rev ?? 0) } : undefined;
  }
}
