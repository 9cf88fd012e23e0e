import { expect } from "vitest";
import type { KeyPage, KeyPageRequest } from "@harness-s/core";

/** Every page of key `keyId`'s list, `limit` at a time, following each `next` (at most 20 pages). */
export async function allPages<T extends { id: string }>(
  list: (keyId: string, page: KeyPageRequest) => Promise<KeyPage<T>>,
  keyId: string,
  limit: number,
) {
  const pages: string[][] = [];
  let after: string | undefined;
  do {
    const page = await list(keyId, { limit, ...(after === undefined ? {} : { after }) });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    pages.push(page.items.map((i) => i.id));
    after = page.next;
  } while (after !== undefined && pages.length < 20);
  return pages;
}

/**
 * What every store's `listByKey` must do, given a store holding k1's runs `mine` (id and createdAt)
 * and k2's runs `theirs`: k1 reads exactly its own, newest first (ties: the greater id first), a
 * page at a time without a repeat or a gap; k2 reads only its own; a key with none reads nothing.
 */
export async function expectListsByKey<T extends { id: string }>(
  list: (keyId: string, page: KeyPageRequest) => Promise<KeyPage<T>>,
  mine: readonly { id: string; createdAt: number }[],
  theirs: readonly { id: string }[],
): Promise<void> {
  const newestFirst = [...mine].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((r) => r.id);
  for (const limit of [1, 2, mine.length, mine.length + 1])
    expect((await allPages(list, "k1", limit)).flat(), `limit ${limit}`).toEqual(newestFirst);
  const paged = await allPages(list, "k1", 2);
  expect(paged.map((p) => p.length)).toEqual(
    [2, 2, ...(mine.length % 2 ? [1] : [])].slice(0, Math.ceil(mine.length / 2)),
  );
  expect((await list("k1", { limit: mine.length })).next).toBeUndefined();
  expect((await allPages(list, "k2", 10)).flat().sort()).toEqual(theirs.map((r) => r.id).sort());
  expect(await list("k-none", { limit: 5 })).toEqual({ items: [] });
}
