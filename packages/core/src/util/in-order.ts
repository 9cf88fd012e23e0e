/**
 * Awaits every promise, then answers as if they had run one after another: the first rejection in
 * the order given (not the first in time), else every value. Work started at once, errors as a
 * sequence would report them.
 *
 * @example
 * const [record, pool] = await inOrder([endpoints.get(k, id), pools.get(poolId)]);
 */
export async function inOrder<T extends readonly unknown[]>(
  promises: { readonly [K in keyof T]: Promise<T[K]> },
): Promise<T> {
  const settled = await Promise.allSettled(promises as readonly Promise<unknown>[]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
