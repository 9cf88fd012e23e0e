import { AsyncLocalStorage } from "node:async_hooks";
import type { CostUsage } from "@harness-s/core/billing";

/** SQS bills each 64 KB chunk of a request's payload as one request. */
export const SQS_CHUNK_BYTES = 64 * 1024;

type Scope = CostUsage;

function addInto(into: CostUsage, used: CostUsage): void {
  for (const [k, v] of Object.entries(used) as [keyof CostUsage, number][]) into[k] = (into[k] ?? 0) + v;
}

/**
 * What AWS calls cost, as they happen: instrumented clients ({@link instrumentDynamo},
 * {@link instrumentSqs}) and the policy client report here, and each report lands in the scope
 * the call was made in (an API request, one queue message) — or, outside any scope, in
 * `unattributed` (a poller's receives: the deployment's own overhead). `total` is everything.
 *
 * @example
 * const used: CostUsage = {};
 * await consumption.within(used, () => handler(event)); // used: { dynamoWriteUnits: 2, sqsRequests: 1 }, filled also when it throws
 */
export class ConsumptionMeter {
  private readonly scopes = new AsyncLocalStorage<Scope>();
  /** Everything reported since this meter was made, in a scope or not. */
  readonly total: CostUsage = {};
  private loose: CostUsage = {};

  /**
   * Runs `fn` in a scope whose consumption is added to `into` as it happens (read it when `fn` ends, failed or not).
   */
  within<T>(into: CostUsage, fn: () => Promise<T>): Promise<T> {
    return this.scopes.run(into, fn);
  }

  /** What the current scope consumed so far (nothing outside a scope). */
  current(): CostUsage {
    return { ...this.scopes.getStore() };
  }

  record(used: CostUsage): void {
    addInto(this.total, used);
    addInto(this.scopes.getStore() ?? this.loose, used);
  }

  /** What was consumed outside any scope since the last call (then forgotten here). */
  takeUnattributed(): CostUsage {
    const out = this.loose;
    this.loose = {};
    return out;
  }
}
