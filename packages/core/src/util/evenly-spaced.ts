/**
 * `n` items spread evenly over `items` (all of them when `n` is at least their number).
 *
 * @example
 * evenlySpaced([0, 1, 2, 3, 4, 5], 3); // [0, 2, 4]
 */
export function evenlySpaced<T>(items: readonly T[], n: number): readonly T[] {
  if (n >= items.length) return items;
  const stride = items.length / n;
  return Array.from({ length: n }, (_, i) => items[Math.floor(i * stride)]!);
}
