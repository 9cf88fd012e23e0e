import { visibleTo } from "../access/keys.ts";
import type { PoolStore } from "../harness/pool-store.ts";

/**
 * Whether `key` may see (and route in) a pool: one with no owner is every key's; an owned one its owner's and admin
 * keys'.
 */
export const poolVisibleTo = (owner: string | undefined, key: { id: string; scopes: readonly string[] }): boolean =>
  owner === undefined || visibleTo(owner, key);

/**
 * The pools `key` may see, as a store: another key's pool is not there (`get` answers undefined,
 * so a rescue or a route naming it is a 404 `pool`), and `list` leaves it out. Writes go through.
 *
 * @example
 * await startRescue(req, { ...deps, pools: poolsVisibleTo(deps.pools, key) }, key.id);
 */
export function poolsVisibleTo(pools: PoolStore, key: { id: string; scopes: readonly string[] }): PoolStore {
  return {
    put: (pool) => pools.put(pool),
    get: async (id) => {
      const pool = await pools.get(id);
      return pool && poolVisibleTo(pool.owner, key) ? pool : undefined;
    },
    list: async () => (await pools.list()).filter((p) => poolVisibleTo(p.owner, key)),
  };
}
