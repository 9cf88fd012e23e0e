import { GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import { takeTokens, type Bucket, type KeyRate, type RateBlocks } from "@harness-s/core/access";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** Attempts at a lease's read-modify-write before it gives up (the instance's own bucket decides then). */
const LEASE_ATTEMPTS = 4;
/** Keys whose bucket a process remembers as it last wrote it (the least recently written goes first). */
const REMEMBERED_KEYS = 1_024;

type Versioned = { bucket: Bucket | undefined; version: number };

/**
 * Each key's shared rate bucket as an item of the Usage table (`rate#<key id>`: `#` is in no key's id), written under
 * a version so two instances never both spend its last tokens. An instance writes from the bucket as it last wrote it
 * (one request while no other instance wrote since), and rereads when the version check fails. A lease is a block of
 * tokens (`RATE_BLOCKS`), so a key's item takes a write per block, not per request.
 */
export class DynamoRateBlocks implements RateBlocks {
  private readonly known = new Map<string, Versioned>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async lease(keyId: string, rate: KeyRate, now: number, want: number): Promise<{ granted: number; waitMs: number }> {
    for (let attempt = 0; attempt < LEASE_ATTEMPTS; attempt++) {
      const remembered = this.known.get(keyId);
      this.known.delete(keyId);
      const { bucket, version } = remembered ?? (await this.read(keyId));
      const taken = takeTokens(bucket, now, rate, want);
      // Nothing granted from a bucket only remembered: another instance may have left more; read it. Nothing granted
      // from what was just read: nothing to write.
      if (taken.granted === 0) {
        if (remembered) continue;
        this.remember(keyId, { bucket, version });
        return { granted: 0, waitMs: taken.waitMs };
      }
      try {
        await aws("lease rate tokens", () =>
          this.doc.send(
            new PutCommand({
              TableName: this.tables.Usage,
              Item: { keyId: `rate#${keyId}`, tokens: taken.bucket.tokens, at: taken.bucket.at, version: version + 1 },
              ConditionExpression: "attribute_not_exists(keyId) OR version = :v",
              ExpressionAttributeValues: { ":v": version },
            }),
          ),
        );
        this.remember(keyId, { bucket: taken.bucket, version: version + 1 });
        return { granted: taken.granted, waitMs: taken.waitMs };
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    throw new ConflictError(`the rate bucket of key ${keyId} changed ${LEASE_ATTEMPTS} times while being leased`);
  }

  private async read(keyId: string): Promise<Versioned> {
    const out = await aws("read a rate bucket", () =>
      this.doc.send(
        new GetCommand({ TableName: this.tables.Usage, Key: { keyId: `rate#${keyId}` }, ConsistentRead: true }),
      ),
    );
    const item = out.Item;
    return item
      ? { bucket: { tokens: Number(item.tokens), at: Number(item.at) }, version: Number(item.version) }
      : { bucket: undefined, version: 0 };
  }

  private remember(keyId: string, state: Versioned): void {
    this.known.set(keyId, state);
    if (this.known.size > REMEMBERED_KEYS) this.known.delete(this.known.keys().next().value!);
  }
}
