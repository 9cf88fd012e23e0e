import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ConflictError } from "@harness-s/core";
import type { RescueSlots } from "@harness-s/core/rescue";
import { aws } from "../../errors.ts";
import type { TableNames } from "../../dynamo/tables.ts";

type Holds = Record<string, { slots: number; until: number }>;

/** Attempts at a hold's read-modify-write before giving up under contention (each retry rereads). */
const HOLD_ATTEMPTS = 8;

/**
 * Each key's holds on its item of the Usage table (by default `rescueHolds`: a map of rescue id to
 * slots and expiry, written under a version so two holds never both take the last slots; expired
 * holds are dropped on each write). Another `attribute` keeps another kind of hold apart (the
 * dispatch worker's running caller rollouts: `runningHolds`).
 */
export class DynamoRescueSlots implements RescueSlots {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly attribute: "rescueHolds" | "runningHolds" = "rescueHolds",
  ) {}

  async hold(keyId: string, id: string, slots: number, limit: number, now: number, until: number): Promise<boolean> {
    return this.update(keyId, (holds) => {
      const live = Object.fromEntries(Object.entries(holds).filter(([k, h]) => h.until > now && k !== id));
      if (Object.values(live).reduce((n, h) => n + h.slots, 0) + slots > limit) return undefined;
      return { ...live, [id]: { slots, until } };
    });
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
    return { "#h": this.attribute, "#v": `${this.attribute}Version` };
  }

  private async read(keyId: string): Promise<{ holds: Holds; version: number }> {
    const out = await aws(`read ${this.attribute}`, () =>
      this.doc.send(new GetCommand({ TableName: this.tables.Usage, Key: { keyId }, ConsistentRead: true, ProjectionExpression: "#h, #v", ExpressionAttributeNames: this.names })),
    );
    return { holds: (out.Item?.[this.attribute] as Holds | undefined) ?? {}, version: Number(out.Item?.[`${this.attribute}Version`] ?? 0) };
  }

  /** Writes `change(holds)` if no other write came between; undefined from `change`: nothing to write (false). */
  private async update(keyId: string, change: (holds: Holds) => Holds | undefined): Promise<boolean> {
    for (let attempt = 0; attempt < HOLD_ATTEMPTS; attempt++) {
      const { holds, version } = await this.read(keyId);
      const next = change(holds);
      if (!next) return false;
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
        return true;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    throw new ConflictError(`the ${this.attribute} of key ${keyId} changed ${HOLD_ATTEMPTS} times while being written; try again`);
  }
}
