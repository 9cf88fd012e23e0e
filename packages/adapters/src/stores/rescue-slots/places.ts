import { DeleteCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import type { HoldRequest, RescueSlots } from "@harness-s/core/dispatch";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

/** Writes one hold may try before it is answered "contended" (each a different free place; a reread when none is left). */
export const PLACE_ATTEMPTS = 4;
/** Keys whose leases a process remembers as last seen. */
const SEEN_KEYS = 1_024;
/** How long a lapsed lease's item outlives its lease before DynamoDB's time to live may delete it (s). */
const PLACE_TTL_SECONDS = 3_600;

type Lease = { place: string; holder: string; until: number };

/** What a process's holds met: holds asked, writes tried, and writes that lost their place to another writer. */
export interface PlaceStats {
  holds: number;
  writes: number;
  conflicts: number;
}

/**
 * Each key's running places as items of their own (`RunningPlaces`: partition the key, sort key the place `00`…): a
 * hold reads the key's leases (one Query, consistent) and takes a free or lapsed place by a conditional write that
 * fails when another writer took it first; a release deletes the place only while this holder's. Writes spread over
 * the key's places instead of one item taking every hold and release, so processes that hold at once conflict only
 * when they pick the same place; a process that dies leaves its leases to lapse at `until`. Never more than `limit`
 * leases live at once: each place is one lease, and a hold takes a place below `limit` only.
 */
export class DynamoRunningPlaces implements RescueSlots {
  readonly stats: PlaceStats = { holds: 0, writes: 0, conflicts: 0 };
  /**
   * Each key's leases as this process last read them, with its own takes and releases since: where its next holds try
   * first (a guess: the conditional write decides). The least recently read key is forgotten past 1,024.
   */
  private readonly seen = new Map<string, Lease[]>();
  /** The place each of this process's holders took (a release deletes it without a read). */
  private readonly placeOf = new Map<string, string>();
  /** Places this process holds or is taking now, by key: its own holds never try the same place at once. */
  private readonly mine = new Map<string, Set<string>>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    return this.holdMany(keyId, [{ id, slots, limit, now, until }]).then((held) => held[0]!);
  }

  /**
   * A write per hold asked together, on distinct places, side by side: first on places this process last saw free (no
   * read: one request per hold while they are), and after a write that lost its place, or when none was seen free, on
   * places a read of the key's leases finds free. A hold whose write lost tries another free place, and rereads when
   * none is left ({@link PLACE_ATTEMPTS} writes in all; then it is contended: ConflictError, and its rollout waits its
   * turn). "Full" is only ever answered from a read.
   */
  async holdMany(keyId: string, asked: readonly HoldRequest[]): Promise<boolean[]> {
    this.stats.holds += asked.length;
    if (asked.some((h) => h.slots !== 1)) throw new Error("a running place holds one rollout");
    const answers = new Map<number, boolean>();
    const tries = new Map<number, number>();
    let pending = asked.map((_, i) => i);
    const first = asked[0]!;
    let seen: readonly Lease[] | undefined = this.seen.get(keyId) ?? [];
    if (freePlaces(seen, first.limit, first.now).length === 0) seen = undefined;
    while (pending.length) {
      const leases = seen ?? (await this.leases(keyId));
      const fromRead = seen === undefined;
      seen = undefined;
      const now = asked[pending[0]!]!.now;
      const next: number[] = [];
      const busy = this.mine.get(keyId) ?? new Set<string>();
      const free = freePlaces(leases, asked[pending[0]!]!.limit, now).filter((p) => !busy.has(p));
      await Promise.all(
        pending.map(async (i) => {
          const h = asked[i]!;
          const own = leases.find((l) => l.holder === h.id && l.until > now);
          const place = own?.place ?? free.shift();
          if (place === undefined) {
            if (fromRead) return void answers.set(i, false);
            return void next.push(i);
          }
          const n = (tries.get(i) ?? 0) + 1;
          tries.set(i, n);
          this.claim(keyId, place);
          if (await this.take(keyId, place, h).catch((err) => this.unclaim(keyId, place, err)))
            return void answers.set(i, true);
          this.unclaim(keyId, place);
          if (n >= PLACE_ATTEMPTS) throw new ConflictError(`key ${keyId}'s running places changed ${n} times`);
          next.push(i);
        }),
      );
      pending = next;
    }
    return asked.map((_, i) => answers.get(i)!);
  }

  /** Extends the lease `id` took here to `until`, while it is still its holder's (one conditional write, no read). */
  async renew(keyId: string, id: string, now: number, until: number): Promise<boolean> {
    const place = this.placeOf.get(id);
    if (place === undefined) return false;
    return this.take(keyId, place, { id, slots: 1, limit: 0, now, until }, "holder = :id");
  }

  async release(keyId: string, id: string): Promise<void> {
    const place = this.placeOf.get(id) ?? (await this.leases(keyId)).find((l) => l.holder === id)?.place;
    this.placeOf.delete(id);
    if (place === undefined) return;
    this.unclaim(keyId, place);
    const known = this.seen.get(keyId);
    if (known)
      this.seen.set(
        keyId,
        known.filter((l) => l.place !== place),
      );
    try {
      await aws("release a running place", () =>
        this.doc.send(
          new DeleteCommand({
            TableName: this.tables.RunningPlaces,
            Key: { keyId, place },
            ConditionExpression: "holder = :id",
            ExpressionAttributeValues: { ":id": id },
          }),
        ),
      );
    } catch (err) {
      // Lapsed and taken by another holder since: nothing of this holder's is left to release.
      if (!(err instanceof ConflictError)) throw err;
    }
  }

  async held(keyId: string, now: number): Promise<number> {
    return (await this.leases(keyId)).filter((l) => l.until > now).length;
  }

  /** Notes a place this process is taking (or holds) for the key. */
  private claim(keyId: string, place: string): void {
    const set = this.mine.get(keyId) ?? new Set<string>();
    this.mine.set(keyId, set.add(place));
  }

  /** Lets a place go from this process's notes (its take lost, failed, or its hold was released); rethrows `err`. */
  private unclaim(keyId: string, place: string, err?: unknown): false {
    const set = this.mine.get(keyId);
    set?.delete(place);
    if (set?.size === 0) this.mine.delete(keyId);
    if (err !== undefined) throw err;
    return false;
  }

  /** The key's leases as they are now (a consistent Query of its places). */
  async leases(keyId: string): Promise<Lease[]> {
    const out = await aws("read running places", () =>
      this.doc.send(
        new QueryCommand({
          TableName: this.tables.RunningPlaces,
          KeyConditionExpression: "keyId = :k",
          ExpressionAttributeValues: { ":k": keyId },
          ConsistentRead: true,
        }),
      ),
    );
    const leases = (out.Items ?? []).map((i) => ({
      place: String(i.place),
      holder: String(i.holder),
      until: Number(i.until),
    }));
    this.remember(keyId, leases);
    return leases;
  }

  /** Notes the key's leases as last seen here (bounded: the least recently noted key goes first). */
  private remember(keyId: string, leases: Lease[]): void {
    this.seen.delete(keyId);
    this.seen.set(keyId, leases);
    if (this.seen.size > SEEN_KEYS) this.seen.delete(this.seen.keys().next().value!);
  }

  /** Takes `place` for the hold unless another holder's unlapsed lease is there: whether it did. */
  private async take(
    keyId: string,
    place: string,
    h: HoldRequest,
    condition = "attribute_not_exists(holder) OR #until <= :now OR holder = :id",
  ): Promise<boolean> {
    this.stats.writes++;
    try {
      await aws("take a running place", () =>
        this.doc.send(
          new PutCommand({
            TableName: this.tables.RunningPlaces,
            Item: {
              keyId,
              place,
              holder: h.id,
              until: h.until,
              expiresAt: Math.ceil(h.until / 1000) + PLACE_TTL_SECONDS,
            },
            ConditionExpression: condition,
            ...(condition.includes("#until") ? { ExpressionAttributeNames: { "#until": "until" } } : {}),
            ExpressionAttributeValues: { ...(condition.includes(":now") ? { ":now": h.now } : {}), ":id": h.id },
          }),
        ),
      );
      this.placeOf.set(h.id, place);
      const others = (this.seen.get(keyId) ?? []).filter((l) => l.place !== place);
      this.remember(keyId, [...others, { place, holder: h.id, until: h.until }]);
      return true;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      this.stats.conflicts++;
      return false;
    }
  }
}

/**
 * The places below `limit` no unlapsed lease holds, in a shuffled order (processes holding at once seldom pick the
 * same one); none when the live leases already reach `limit`.
 */
export function freePlaces(leases: readonly Lease[], limit: number, now: number): string[] {
  const live = leases.filter((l) => l.until > now);
  if (live.length >= limit) return [];
  const taken = new Set(live.map((l) => l.place));
  const free = Array.from({ length: limit }, (_, i) => placeName(i)).filter((p) => !taken.has(p));
  // A pseudo-random rotation: where each process starts looking differs, the places it tries stay distinct.
  const start = Math.floor(Math.random() * free.length);
  return [...free.slice(start), ...free.slice(0, start)].slice(0, limit - live.length);
}

/** A place's sort key: its index, two digits (a key's limit is at most 99 places). */
export const placeName = (i: number) => String(i).padStart(2, "0");
