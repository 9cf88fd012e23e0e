import { gzipSync } from "node:zlib";
import { PutCommand, TransactWriteCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Rollout, batchedLookups, summaryOf } from "@harness-s/core";
import { translateAwsError } from "../../errors.ts";

/** Bytes of compressed payload per item: well below DynamoDB's 400 KB item limit. */
export const CHUNK_BYTES = 300 * 1024;
/** One transaction writes at most 100 items, so a rollout may take up to this many chunks. */
const MAX_CHUNKS = 100;
/**
 * The most a transaction of grouped rollouts carries: DynamoDB's 100 items, and its 4 MB less room for keys and
 * summaries.
 */
const GROUP_LIMITS = { items: 100, bytes: 3 * 1024 * 1024 } as const;

export const partKey = (index: number, chunk: number) =>
  `${String(index).padStart(6, "0")}#${String(chunk).padStart(3, "0")}`;

type Outcome = "stored" | "duplicate";
type Put = { TableName: string; Item: Record<string, unknown>; ConditionExpression: string };
/** One rollout as its conditional puts (one per chunk; the first carries its summary) and its compressed size. */
type Encoded = { index: number; puts: Put[]; bytes: number };

/** A rollout as its chunks' conditional puts: gzip-compressed, split into CHUNK_BYTES. */
export function encodeRollout(table: string, jobId: string, index: number, rollout: Rollout): Encoded {
  const zipped = gzipSync(Buffer.from(JSON.stringify(Rollout.parse(rollout))));
  const count = Math.max(1, Math.ceil(zipped.length / CHUNK_BYTES));
  if (count > MAX_CHUNKS)
    throw new Error(
      `rollout ${jobId}/${index} is ${zipped.length} bytes compressed; the limit is ${MAX_CHUNKS * CHUNK_BYTES}`,
    );
  // The first chunk carries the rollout's summary: a status read lists summaries without the trajectories.
  const summary = summaryOf(index, rollout);
  const puts = Array.from({ length: count }, (_, chunk) => ({
    TableName: table,
    Item: {
      jobId,
      part: partKey(index, chunk),
      index,
      chunk,
      chunks: count,
      data: zipped.subarray(chunk * CHUNK_BYTES, (chunk + 1) * CHUNK_BYTES),
      ...(chunk === 0 ? { summary } : {}),
    },
    ConditionExpression: "attribute_not_exists(part)",
  }));
  return { index, puts, bytes: zipped.length };
}

/** Whether a write failed only on its conditions (an item stored already), and which of a transaction's items did. */
function conditionsFailed(err: unknown): boolean[] | undefined {
  if ((err as Error)?.name === "ConditionalCheckFailedException") return [true];
  const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  if (!reasons?.some((r) => r.Code === "ConditionalCheckFailed")) return undefined;
  // A transaction cancelled for anything else too (a conflict, a throttle) is not a duplicate.
  if (!reasons.every((r) => r.Code === undefined || r.Code === "None" || r.Code === "ConditionalCheckFailed"))
    return undefined;
  return reasons.map((r) => r.Code === "ConditionalCheckFailed");
}

/**
 * One rollout's chunks in one transaction (one chunk: one put, as a transaction bills its write units twice); stored
 * already: a duplicate.
 */
export async function putRollout(doc: DynamoDBDocumentClient, rollout: Encoded): Promise<Outcome> {
  try {
    if (rollout.puts.length === 1) await doc.send(new PutCommand(rollout.puts[0]!));
    else await doc.send(new TransactWriteCommand({ TransactItems: rollout.puts.map((Put) => ({ Put })) }));
    return "stored";
  } catch (err) {
    if (conditionsFailed(err)) return "duplicate";
    throw translateAwsError(err, "store rollout");
  }
}

/**
 * Single-chunk rollouts of one rescue in one transaction; the ones stored already are duplicates and the rest are
 * written again without them.
 */
async function putTogether(
  doc: DynamoDBDocumentClient,
  group: readonly Encoded[],
  out: Map<number, Outcome | Error>,
): Promise<void> {
  let rest = group;
  while (rest.length > 1) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: rest.map((r) => ({ Put: r.puts[0]! })) }));
      for (const r of rest) out.set(r.index, "stored");
      return;
    } catch (err) {
      const failed = conditionsFailed(err);
      if (!failed) throw translateAwsError(err, "store rollouts");
      for (const [i, r] of rest.entries()) if (failed[i]) out.set(r.index, "duplicate");
      rest = rest.filter((_, i) => !failed[i]);
    }
  }
  if (rest.length === 1) out.set(rest[0]!.index, await putRollout(doc, rest[0]!));
}

/** Rollouts split into transactions within GROUP_LIMITS, in order. */
function groupsOf(rollouts: readonly Encoded[]): Encoded[][] {
  const groups: Encoded[][] = [];
  let bytes = 0;
  for (const r of rollouts) {
    const last = groups.at(-1);
    if (last && last.length < GROUP_LIMITS.items && bytes + r.bytes <= GROUP_LIMITS.bytes) {
      last.push(r);
      bytes += r.bytes;
    } else {
      groups.push([r]);
      bytes = r.bytes;
    }
  }
  return groups;
}

type Entry = { index: number; rollout: Rollout };
type Writer = (jobId: string, entry: Entry) => Promise<Outcome>;
const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));

/** Runs `write` for `rollouts`, each's outcome (or the error that stopped it) in `out`. */
async function settle(
  rollouts: readonly Encoded[],
  out: Map<number, Outcome | Error>,
  write: () => Promise<void>,
): Promise<void> {
  try {
    await write();
  } catch (err) {
    for (const r of rollouts) if (!out.has(r.index)) out.set(r.index, asError(err));
  }
}

/**
 * One rescue's rollouts written together: multi-chunk ones in their own transactions, the rest grouped; a slot asked
 * twice is written once (the second a duplicate).
 */
async function writeTogether(
  doc: DynamoDBDocumentClient,
  table: string,
  jobId: string,
  entries: readonly Entry[],
): Promise<Map<Entry, Outcome | Error>> {
  const outcomes = new Map<number, Outcome | Error>();
  const encoded: Encoded[] = [];
  const first = new Map<number, Entry>();
  for (const e of entries) {
    if (first.has(e.index)) continue;
    first.set(e.index, e);
    try {
      encoded.push(encodeRollout(table, jobId, e.index, e.rollout));
    } catch (err) {
      outcomes.set(e.index, asError(err));
    }
  }
  await Promise.all([
    ...encoded
      .filter((r) => r.puts.length > 1)
      .map((r) => settle([r], outcomes, async () => void outcomes.set(r.index, await putRollout(doc, r)))),
    ...groupsOf(encoded.filter((r) => r.puts.length === 1)).map((group) =>
      settle(group, outcomes, () => putTogether(doc, group, outcomes)),
    ),
  ]);
  const repeat = (o: Outcome | Error | undefined) => (o === "stored" ? "duplicate" : (o ?? new Error("not written")));
  return new Map(
    entries.map((e) => [
      e,
      first.get(e.index) === e ? (outcomes.get(e.index) ?? new Error("not written")) : repeat(outcomes.get(e.index)),
    ]),
  );
}

/**
 * How a store's rollouts are written. `each`: on its own as it ends, one conditional put (the
 * fewest write units: what the cloud bills). `grouped`: a rescue's rollouts that end together (in
 * one turn, or while one of its writes is in flight) in one transaction of conditional puts: twice
 * the write units, but one request for many, and on one machine (`serve` on DynamoDB Local) it is
 * the requests that cost. A rollout stored already is a duplicate either way; one that cannot be
 * written fails alone (the rest of its rescue's are written).
 */
export const ROLLOUT_WRITES = {
  each:
    (doc: DynamoDBDocumentClient, table: string): Writer =>
    async (jobId, { index, rollout }) =>
      putRollout(doc, encodeRollout(table, jobId, index, rollout)),
  grouped: (doc: DynamoDBDocumentClient, table: string): Writer => {
    // batchedLookups runs each group in its first asker's async context: what it consumes is metered to a slot of that
    // group.
    const together = batchedLookups(
      (jobId: string, entries: Entry[]) => writeTogether(doc, table, jobId, entries),
      new Error("not written") as Outcome | Error,
    );
    return async (jobId, entry) => {
      const outcome = await together(jobId, entry);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    };
  },
} as const satisfies Record<string, (doc: DynamoDBDocumentClient, table: string) => Writer>;
export type RolloutWrites = keyof typeof ROLLOUT_WRITES;
