import type { Clock } from "@harness-s/core";

/** How long a cached entry is served, and by which clock; no TTL: kept for the life of the process. */
export interface CacheOptions {
  ttlMs?: number;
  clock?: Clock;
  /** Entries kept at most (the oldest read goes first); default 1,024. */
  maxEntries?: number;
}

/**
 * Found values by key, each for `ttlMs`: concurrent reads of one key share one store read, and a
 * miss or a failed read is never kept (a value created a moment later is found at once).
 */
export class ReadCache<V> {
  private readonly entries = new Map<string, { value: Promise<V | undefined>; at: number }>();

  constructor(private readonly options: CacheOptions) {}

  get(key: string, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = this.options.clock?.now() ?? 0;
    const hit = this.entries.get(key);
    if (hit && (this.options.ttlMs === undefined || now - hit.at < this.options.ttlMs)) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const value = read().then(
      (v) => {
        if (v === undefined) this.forget(key, value);
        return v;
      },
      (err) => {
        this.forget(key, value);
        throw err;
      },
    );
    this.entries.set(key, { value, at: now });
    while (this.entries.size > (this.options.maxEntries ?? 1024))
      this.entries.delete(this.entries.keys().next().value!);
    return value;
  }

  drop(key: string): void {
    this.entries.delete(key);
  }

  private forget(key: string, value: Promise<V | undefined>) {
    if (this.entries.get(key)?.value === value) this.entries.delete(key);
  }
}
