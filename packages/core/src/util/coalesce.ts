import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Concurrent calls of `read` with the same key share one call: a caller arriving while a read of
 * its key is in flight gets that read's answer (never one older than the call it joins started).
 *
 * @example
 * const get = singleFlight((id: string) => jobs.get(id), (id) => id);
 */
export function singleFlight<A extends unknown[], T>(
  read: (...args: A) => Promise<T>,
  keyOf: (...args: A) => string,
): (...args: A) => Promise<T> {
  const inFlight = new Map<string, Promise<T>>();
  return (...args) => {
    const key = keyOf(...args);
    const running = inFlight.get(key);
    if (running) return running;
    const started = read(...args).finally(() => inFlight.delete(key));
    inFlight.set(key, started);
    return started;
  };
}

/** Runs a function in the async context it was captured in. */
type Context = <R>(fn: () => R) => R;

/**
 * Calls of `add(key, part)` that arrive in the same turn of the event loop, or while a write of
 * their key is in flight, go together in one `write(key, merged)` (parts merged in the order
 * asked); each caller's promise settles with the write that carried its part (a failed write
 * fails every caller in it, and none of their parts is written). Nothing is dropped or added twice.
 * Each write runs in the async context of the first caller whose part it carries (which waits for
 * it): what it consumes is counted there, never in a caller that has gone on.
 *
 * @example
 * const addSpend = coalescedAdds((id, spend) => jobs.addSpend(id, spend), sumSpend);
 */
export function coalescedAdds<P>(
  write: (key: string, merged: P) => Promise<void>,
  merge: (a: P, b: P) => P,
): (key: string, part: P) => Promise<void> {
  const waiting = new Map<
    string,
    { merged: P; context: Context; settle: { resolve: () => void; reject: (err: unknown) => void }[] }
  >();
  const writing = new Set<string>();
  const flush = async (key: string): Promise<void> => {
    for (let next = waiting.get(key); next; next = waiting.get(key)) {
      waiting.delete(key);
      writing.add(key);
      try {
        const { merged } = next;
        await next.context(() => write(key, merged));
        for (const s of next.settle) s.resolve();
      } catch (err) {
        for (const s of next.settle) s.reject(err);
      } finally {
        writing.delete(key);
      }
    }
  };
  return (key, part) =>
    new Promise<void>((resolve, reject) => {
      const queued = waiting.get(key);
      if (queued) {
        queued.merged = merge(queued.merged, part);
        queued.settle.push({ resolve, reject });
        return;
      }
      waiting.set(key, { merged: part, context: AsyncLocalStorage.snapshot(), settle: [{ resolve, reject }] });
      // The first of a turn starts the write after the turn (its batch-mates join it); one in flight takes it on next.
      if (!writing.has(key)) setImmediate(() => void flush(key));
    });
}

/**
 * Calls of `ask(key, item)` that arrive in the same turn of the event loop, or while a call of
 * their key is in flight, go together in one `askMany(key, items)`, each answered from its map
 * (an item it has no answer for: `absent`). Each `askMany` runs in the async context of the first
 * caller among its items (which waits for it), as {@link coalescedAdds}'s writes do.
 *
 * @example
 * const has = batchedLookups((jobId, indexes) => presentOf(jobId, indexes), false);
 */
export function batchedLookups<I, T>(
  askMany: (key: string, items: I[]) => Promise<Map<I, T>>,
  absent: T,
): (key: string, item: I) => Promise<T> {
  const waiting = new Map<
    string,
    { item: I; context: Context; resolve: (v: T) => void; reject: (err: unknown) => void }[]
  >();
  const asking = new Set<string>();
  const flush = async (key: string): Promise<void> => {
    for (let next = waiting.get(key); next?.length; next = waiting.get(key)) {
      waiting.delete(key);
      asking.add(key);
      try {
        const items = [...new Set(next.map((w) => w.item))];
        const found = await next[0]!.context(() => askMany(key, items));
        for (const w of next) w.resolve(found.has(w.item) ? found.get(w.item)! : absent);
      } catch (err) {
        for (const w of next) w.reject(err);
      } finally {
        asking.delete(key);
      }
    }
  };
  return (key, item) =>
    new Promise<T>((resolve, reject) => {
      const queued = waiting.get(key);
      const context = AsyncLocalStorage.snapshot();
      if (queued) return void queued.push({ item, context, resolve, reject });
      waiting.set(key, [{ item, context, resolve, reject }]);
      if (!asking.has(key)) setImmediate(() => void flush(key));
    });
}
