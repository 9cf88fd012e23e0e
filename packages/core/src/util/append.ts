/**
 * Appends `items` to `target` one by one: `target.push(...items)` passes every item as an argument,
 * and an array from outside (a prompt's ids: ~130k in Node) overflows the call stack that way.
 *
 * @example
 * appendAll(ids, promptIds);
 */
export function appendAll<T>(target: T[], items: readonly T[]): T[] {
  for (const item of items) target.push(item);
  return target;
}
