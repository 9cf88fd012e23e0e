/**
 * Entries kept per scope (an API key), least recently used first, under two bounds: at most
 * `maxPerScope` in one scope (its own oldest goes), and at most `maxTotal` in all (the oldest of
 * the scope holding the most goes). A scope that holds no more than any other is never evicted
 * to make room for another scope's entries: one key cannot push out another's.
 *
 * @example
 * const lru = new ScopedLru<string>({ maxPerScope: 2, maxTotal: 3 }, (id, v) => console.log("evicted", id, v));
 * lru.set("key-a", "e1", "…");
 */
export class ScopedLru<V> {
  private readonly scopes = new Map<string, Map<string, V>>();
  private total = 0;

  constructor(
    private readonly limits: { maxPerScope: number; maxTotal: number },
    private readonly onEvict: (scope: string, id: string, value: V) => void = () => undefined,
  ) {}

  get size(): number {
    return this.total;
  }

  /** The entry, without touching its recency. */
  peek(scope: string, id: string): V | undefined {
    return this.scopes.get(scope)?.get(id);
  }

  /** The entry, now the most recently used of its scope. */
  get(scope: string, id: string): V | undefined {
    const entries = this.scopes.get(scope);
    const value = entries?.get(id);
    if (value === undefined) return undefined;
    entries!.delete(id);
    entries!.set(id, value);
    return value;
  }

  /** Every entry of one scope, oldest first. */
  values(scope: string): V[] {
    return [...(this.scopes.get(scope)?.values() ?? [])];
  }

  /** Every entry of every scope. */
  *all(): IterableIterator<[string, string, V]> {
    for (const [scope, entries] of this.scopes) for (const [id, value] of entries) yield [scope, id, value];
  }

  set(scope: string, id: string, value: V): void {
    const entries = this.scopes.get(scope) ?? new Map<string, V>();
    this.scopes.set(scope, entries);
    if (entries.delete(id)) this.total--;
    entries.set(id, value);
    this.total++;
    while (entries.size > this.limits.maxPerScope) this.evictOldest(scope);
    while (this.total > this.limits.maxTotal) this.evictOldest(this.largestScope(scope));
  }

  delete(scope: string, id: string): boolean {
    const entries = this.scopes.get(scope);
    if (!entries?.delete(id)) return false;
    this.total--;
    if (entries.size === 0) this.scopes.delete(scope);
    return true;
  }

  /** The scope holding the most entries; `prefer` when it holds as many. */
  private largestScope(prefer: string): string {
    let best = prefer;
    let most = this.scopes.get(prefer)?.size ?? 0;
    for (const [scope, entries] of this.scopes)
      if (entries.size > most) {
        best = scope;
        most = entries.size;
      }
    return best;
  }

  private evictOldest(scope: string): void {
    const entries = this.scopes.get(scope);
    const first = entries?.entries().next();
    if (!first || first.done) return;
    const [id, value] = first.value;
    this.delete(scope, id);
    this.onEvict(scope, id, value);
  }
}
