/**
 * `f` over `items` with at most `width` calls in flight, results in the items' order.
 *
 * @example
 * const groups = await inWindows(tasks, 4, (task) => runGroup(task));
 */
export async function inWindows<T, R>(
  items: readonly T[],
  width: number,
  f: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, items.length)) }, lane));
  return out;
}
