import { z } from "zod";
import { ValidationError } from "../errors.ts";
import { hash32 } from "./rng.ts";
import { queryInteger } from "./storable.ts";

/** A list of a key's own runs: items per page when the caller names none, and at most. */
export const KEY_PAGE = { defaultLimit: 20, maxLimit: 50, cursorChars: 200 } as const;

/** `?limit=&cursor=` of a key's list (`cursor`: the `next` of the page before, opaque). */
export const KeyPageQuery = z.object({
  limit: queryInteger(1, KEY_PAGE.maxLimit).default(KEY_PAGE.defaultLimit),
  cursor: z.string().min(1).max(KEY_PAGE.cursorChars).optional(),
});
export type KeyPageQuery = z.infer<typeof KeyPageQuery>;

/** What a store is asked: at most `limit` items older than the position `after` (newest first). */
export interface KeyPageRequest {
  limit: number;
  after?: string;
}
/** A store's page: its items newest first, and the position of the last one when more may follow. */
export interface KeyPage<T> {
  items: T[];
  next?: string;
}

/** A run's place in its key's list: newer first, ties by id (a string that sorts so, as a store's sort key). */
export const listPosition = (createdAt: number, id: string): string =>
  `${String(Math.max(0, Math.floor(createdAt))).padStart(16, "0")}#${id}`;

/** The page of `items` (one key's) that `req` asks for, newest first: what every in-memory store answers. */
export function pageOfKey<T extends { createdAt: number; id: string }>(
  items: readonly T[],
  req: KeyPageRequest,
): KeyPage<T> {
  const sorted = items
    .map((item) => ({ item, at: listPosition(item.createdAt, item.id) }))
    .filter((x) => req.after === undefined || x.at < req.after)
    .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  const page = sorted.slice(0, req.limit);
  return { items: page.map((x) => x.item), ...(sorted.length > req.limit ? { next: page[page.length - 1]!.at } : {}) };
}

const CursorBody = z
  .object({ v: z.literal(1), list: z.string(), key: z.number().int(), after: z.string().min(1).max(120) })
  .strict();

/** base64url of UTF-8 text, and back (undefined when it is not): no Node Buffer in core. */
const toBase64Url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
const fromBase64Url = (text: string): string =>
  new TextDecoder("utf-8", { fatal: true }).decode(
    Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)),
  );

/** The key and list a cursor belongs to (a hash: the cursor names neither). */
const owner = (list: string, keyId: string) => hash32(`${list}:${keyId}`);

/** The opaque cursor of position `after` in key `keyId`'s list `list`. */
export const encodeCursor = (list: string, keyId: string, after: string): string =>
  toBase64Url(JSON.stringify({ v: 1, list, key: owner(list, keyId), after }));

/** The position a cursor holds; a cursor that is not one of this key's for this list is a 400 (VALIDATION_FAILED). */
export function decodeCursor(list: string, keyId: string, cursor: string): string {
  let body: unknown;
  try {
    body = JSON.parse(fromBase64Url(cursor));
  } catch {
    body = undefined;
  }
  const parsed = CursorBody.safeParse(body);
  if (!parsed.success || parsed.data.list !== list || parsed.data.key !== owner(list, keyId))
    throw new ValidationError("cursor", [`not a cursor of this key's ${list}: pass the \`next\` of its previous page`]);
  return parsed.data.after;
}

/**
 * One page of key `keyId`'s list `list` as the API answers it: the store's page, each item mapped,
 * and the cursor of the next page (null at the end).
 */
export async function keyPage<T, U>(
  list: string,
  keyId: string,
  query: KeyPageQuery,
  read: (req: KeyPageRequest) => Promise<KeyPage<T>>,
  map: (item: T) => U | Promise<U>,
): Promise<{ items: U[]; next: string | null }> {
  const after = query.cursor === undefined ? undefined : decodeCursor(list, keyId, query.cursor);
  const page = await read({ limit: query.limit, ...(after === undefined ? {} : { after }) });
  return {
    items: await Promise.all(page.items.map(map)),
    next: page.next === undefined ? null : encodeCursor(list, keyId, page.next),
  };
}
