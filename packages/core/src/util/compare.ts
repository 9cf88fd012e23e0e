import { isDeepStrictEqual } from "node:util";

/**
 * Keys whose values differ (deep equality) between two records, a key missing on one side included.
 *
 * @example
 * differingKeys({ a: 1, b: [2] }, { a: 1, b: [3], c: 0 }); // ["b", "c"]
 */
export function differingKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !isDeepStrictEqual(a[k], b[k]));
}

/**
 * The first value that occurs a second time, or undefined when all are distinct.
 *
 * @example
 * firstRepeated([1, 2, 3, 2]); // 2
 */
export function firstRepeated<T>(xs: readonly T[]): T | undefined {
  const seen = new Set<T>();
  for (const x of xs) {
    if (seen.has(x)) return x;
    seen.add(x);
  }
  return undefined;
}
