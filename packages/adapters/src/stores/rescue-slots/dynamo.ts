import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import type { HoldRequest, RescueSlots } from "@harness-s/core/dispatch";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

type Holds = Record<string, { slots: number; until: number }>;
/** A change to a key's holds: the holds to write, or undefined for none. */
type Change = (holds: Holds) => Holds | undefined;

/** The Usage item's attribute the holds are kept in. */
const ATTRIBUTE = "rescueHolds";
/** Attempts at a hold's read-modify-write before giving up under contention (each retry rereads). */
const HOLD_ATTEMPTS = 8;
/** Keys whose last written holds a process remembers (the oldest written is forgotten first). */
const REMEMBERED_KEYS = 1024;

/**
 * Each key's holds on its item of the Usage table (by default `rescueHolds`: a map of rescue id to
 * slots and expiry, written under a version so two holds never both take the last slots; expired
 * holds are dropped on each write): the API's holds of a key's concurrent rescues, one write per rescue started or
 * ended. A key's running rollouts, held and released once each per rollout by many processes, are
 * {@link DynamoRunningPlaces}' instead (an item per place, not one per key).
 */
export class DynamoRescueSlots implements RescueSlots {
  /**
   * Each key's holds as this process last read or wrote them: a write tries them first instead of
   * reading (one request, not two, while this process is the item's only writer), and rereads
   * when another writer's change fails its version check.
   */
  private readonly known = new Map<string, { holds: Holds; version: number }>();
  /** Each key's changes waiting for its next write (the key is present while a write of it is in flight). */
  private readonly waiting = new Map<
    string,
    { change: Change; resolve: (changed: boolean) => void; reject: (err: unknown) => void }[]
  >();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    return this.update(keyId, (holds) => {
      const live = Object.fromEntries(Object.entries(holds).filter(([k, h]) => h.until > now && k !== id));
      if (Object.values(live).reduce((n, h) => n + h.slots, 0) + slots > limit) return undefined;
      return { ...live, [id]: { slots, until } };
    });
  }

  /** Holds asked together: one write (see {@link update}). */
  holdMany(keyId: string, holds: readonly HoldRequest[]): Promise<boolean[]> {
    return Promise.all(holds.map((h) => this.hold(keyId, h.id, h.slots, h.limit, h.now, h.until)));
  }

  async release(keyId: string, id: string): Promise<void> {
    await this.update(keyId, (holds) => {
      if (!(id in holds)) return undefined;
      const { [id]: _gone, ...rest } = holds;
      return rest;
    });
  }

  async held(keyId: string, now: number): Promise<number> {
    const { holds } = await this.read(keyId);
    return Object.values(holds)
      .filter((h) => h.until > now)
      .reduce((n, h) => n + h.slots, 0);
  }

  private get names() {
    return { "#h": ATTRIBUTE, "#v": `${ATTRIBUTE}Version` };
  }

  private async read(keyId: string): Promise<{ holds: Holds; version: number }> {
    const out = await aws(`read ${ATTRIBUTE}`, () =>
      this.doc.send(
        new GetCommand({
          TableName: this.tables.Usage,
          Key: { keyId },
          ConsistentRead: true,
          ProjectionExpression: "#h, #v",
          ExpressionAttributeNames: this.names,
        }),
      ),
    );
    return {
      holds: (out.Item?.[ATTRIBUTE] as Holds | undefined) ?? {},
      version: Number(out.Item?.[`${ATTRIBUTE}Version`] ?? 0),
    };
  }

  /**
   * Writes `change(holds)` if no other write came between; undefined from `change`: nothing to
   * write (false). A key's changes asked for in the same turn go together in one write, and those
   * asked for while its write is in flight go together in the next one (applied in the order asked, each against the
   * holds the ones before it left), so holds and
   * releases of one process never race each other for the item.
   */
  private update(keyId: string, change: Change): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const queued = this.waiting.get(keyId);
      if (queued) return void queued.push({ change, resolve, reject });
      this.waiting.set(keyId, [{ change, resolve, reject }]);
      // After this turn of the event loop: the holds a batch of slots asks for together go in one write.
      setImmediate(() => void this.drain(keyId));
    });
  }

  /** Writes the key's waiting changes, a group at a time, until none wait. */
  private async drain(keyId: string): Promise<void> {
    for (let group = this.waiting.get(keyId); group?.length; group = this.waiting.get(keyId)) {
      this.waiting.set(keyId, []);
      try {
        const results = await this.writeGroup(keyId, group);
        for (const [i, p] of group.entries()) p.resolve(results[i]!);
      } catch (err) {
        for (const p of group) p.reject(err);
      }
    }
    this.waiting.delete(keyId);
  }

  private remember(keyId: string, state: { holds: Holds; version: number }) {
    this.known.set(keyId, state);
    if (this.known.size > REMEMBERED_KEYS) this.known.delete(this.known.keys().next().value!);
  }

  /**
   * One read-modify-write of the key's holds with every change of `group`: what each changed (under contention, reread
   * and applied again).
   */
  private async writeGroup(keyId: string, group: readonly { change: Change }[]): Promise<boolean[]> {
    for (let attempt = 0; attempt < HOLD_ATTEMPTS; attempt++) {
      const remembered = this.known.get(keyId);
      this.known.delete(keyId);
      const fromMemory = remembered !== undefined;
      const { holds, version } = remembered ?? (await this.read(keyId));
      let next = holds;
      const results = group.map(({ change }) => {
        const changed = change(next);
        if (changed) next = changed;
        return changed !== undefined;
      });
      if (!results.some(Boolean)) {
        // Nothing to write may rest on holds another writer has since changed: only what was just read is trusted.
        if (!fromMemory) return results;
        continue;
      }
      try {
        await aws("write rescue holds", () =>
          this.doc.send(
            new UpdateCommand({
              TableName: this.tables.Usage,
              Key: { keyId },
              UpdateExpression: "SET #h = :h, #v = :next",
              ConditionExpression: "attribute_not_exists(#v) OR #v = :v",
              ExpressionAttributeNames: this.names,
              ExpressionAttributeValues: { ":h": next, ":next": version + 1, ":v": version },
            }),
          ),
        );
        this.remember(keyId, { holds: next, version: version + 1 });
        return results;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    throw new ConflictError(
      `the ${ATTRIBUTE} of key ${keyId} changed ${HOLD_ATTEMPTS} times while being written; try again`,
    );
  }
}
