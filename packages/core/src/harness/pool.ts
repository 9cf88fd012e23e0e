import { z } from "zod";
import { ValidationError, parseOrThrow, NotFoundError } from "../errors.ts";
import { hash32 } from "../util/rng.ts";
import { Id } from "../names.ts";
import { HarnessSpec } from "./spec.ts";

/**
 * The base harness H0 and the frozen siblings used during one training run.
 * `version` is a content hash, so two pools with the same specs have the same version.
 *
 * @example
 * const pool = createPool("embedded", h0, siblings);
 * harnessById(pool, pool.siblings[0].id);
 */
export const HarnessPool = z.object({
  id: Id,
  version: z.string().min(1),
  base: HarnessSpec,
  siblings: z.array(HarnessSpec).min(1),
  notes: z.record(z.string(), z.unknown()).default({}),
  /**
   * The key whose pool this is (one evolved for its environment, `POST /v1/pools` with `evolve`):
   * only that key (and admin keys) may see it or route in it. None: every key may.
   */
  owner: z.string().min(1).max(200).optional(),
});
export type HarnessPool = z.infer<typeof HarnessPool>;

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function contentVersion(value: unknown): string {
  const text = canonicalJson(value);
  return `${hash32(text).toString(16).padStart(8, "0")}${hash32(text, 99).toString(16).padStart(8, "0")}`;
}

export function createPool(
  id: string,
  base: HarnessSpec,
  siblings: HarnessSpec[],
  notes: Record<string, unknown> = {},
): HarnessPool {
  const ids = new Set<string>([base.id]);
  for (const s of siblings) {
    if (ids.has(s.id)) throw new ValidationError(`pool ${id}`, [`duplicate harness id ${s.id}`]);
    ids.add(s.id);
  }
  return { id, version: contentVersion({ base, siblings }), base, siblings, notes };
}

export function parsePool(input: unknown): HarnessPool {
  const pool = parseOrThrow(HarnessPool, input, "harness pool");
  const expected = contentVersion({ base: pool.base, siblings: pool.siblings });
  if (pool.version !== expected) {
    throw new ValidationError("harness pool", [`version ${pool.version} does not match its content (${expected})`]);
  }
  return pool;
}

/** Every harness id of the pool, H0 first. */
export function harnessIds(pool: HarnessPool): string[] {
  return [pool.base.id, ...pool.siblings.map((s) => s.id)];
}

export function harnessById(pool: HarnessPool, id: string): HarnessSpec {
  if (pool.base.id === id) return pool.base;
  const found = pool.siblings.find((s) => s.id === id);
  if (!found) throw new NotFoundError("harness", id);
  return found;
}
