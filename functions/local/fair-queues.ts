import { startFauxqs } from "fauxqs";

/**
 * AWS's thresholds for a noisy tenant of a fair queue ("How Amazon SQS fair queues work", the SQS
 * developer guide): more than 10% of the queue's in-flight messages and at least 30 of its own.
 */
export const NOISY_TENANT = { share: 0.1, inFlight: 30 } as const;

/** A message as fauxqs 1.9.2 holds it (its `SqsQueue.messages`, `inflightMessages`). */
interface HeldMessage {
  messageId: string;
  body: string;
}

const tenants = new WeakMap<HeldMessage, string>();

/**
 * A message's tenant: the key its envelope's payer names, the same key `SqsQueue` sends as its
 * `MessageGroupId` (fauxqs drops that attribute on a standard queue, so it is read back from the
 * body here). A message without one is a tenant of its own, as SQS counts it.
 */
export function tenantOf(message: HeldMessage): string {
  let tenant = tenants.get(message);
  if (tenant === undefined) {
    try {
      const keyId = (JSON.parse(message.body) as { payer?: { keyId?: unknown } }).payer?.keyId;
      tenant = typeof keyId === "string" ? `key:${keyId}` : `message:${message.messageId}`;
    } catch {
      tenant = `message:${message.messageId}`;
    }
    tenants.set(message, tenant);
  }
  return tenant;
}

/**
 * The ready messages in the order a fair queue delivers the next `count`: while a tenant is noisy
 * ({@link NOISY_TENANT}), every quiet tenant's message comes first, in arrival order; then the
 * noisy tenants', the one with the fewest in flight first. The rest keep their order behind them.
 *
 * @example
 * fairOrder(queue.messages, inFlightByTenant(queue.inflightMessages), 10);
 */
export function fairOrder<M extends HeldMessage>(
  ready: readonly M[],
  inFlight: ReadonlyMap<string, number>,
  count: number,
): M[] {
  const total = [...inFlight.values()].reduce((a, b) => a + b, 0);
  const noisy = (t: string) => {
    const n = inFlight.get(t) ?? 0;
    return n >= NOISY_TENANT.inFlight && n > NOISY_TENANT.share * total;
  };
  // No tenant noisy (the usual case): first in, first out, as it stands (no copy on each receive).
  if (![...inFlight.keys()].some(noisy)) return ready as M[];
  const quiet = ready.filter((m) => !noisy(tenantOf(m))).slice(0, count);
  const picked = new Set<M>(quiet);
  const load = new Map(inFlight);
  for (const m of ready) if (picked.has(m)) load.set(tenantOf(m), (load.get(tenantOf(m)) ?? 0) + 1);
  while (picked.size < Math.min(count, ready.length)) {
    let next: M | undefined;
    for (const m of ready)
      if (!picked.has(m) && (next === undefined || (load.get(tenantOf(m)) ?? 0) < (load.get(tenantOf(next)) ?? 0)))
        next = m;
    if (!next) break;
    picked.add(next);
    load.set(tenantOf(next), (load.get(tenantOf(next)) ?? 0) + 1);
  }
  return [...picked, ...ready.filter((m) => !picked.has(m))];
}

/** How many messages of each tenant are in flight (received, not yet deleted or visible again). */
export function inFlightByTenant(inflight: ReadonlyMap<string, { message: HeldMessage }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const { message } of inflight.values()) out.set(tenantOf(message), (out.get(tenantOf(message)) ?? 0) + 1);
  return out;
}

interface FauxqsQueue {
  isFifo(): boolean;
  processTimers(): void;
  messages: HeldMessage[];
  inflightMessages: Map<string, { message: HeldMessage }>;
  dequeue(maxCount: number, ...rest: unknown[]): unknown;
}

let fair: Promise<void> | undefined;

/**
 * Makes fauxqs's standard queues (in this thread) deliver as SQS fair queues do: the deployed
 * dispatch queue is one, because each message carries its key as `MessageGroupId`. fauxqs 1.9.2
 * delivers a standard queue first in, first out and ignores the tenant; its queue class is not
 * exported, so it is reached by file (the version is pinned in package.json, and
 * tests/integration/fair-queue.test.ts fails if this stops taking effect).
 */
export function makeStandardQueuesFair(): Promise<void> {
  fair ??= (async () => {
    const url = new URL("./sqs/sqsStore.js", import.meta.resolve("fauxqs"));
    const { SqsQueue } = (await import(url.href)) as { SqsQueue: { prototype: FauxqsQueue } };
    const dequeue = SqsQueue.prototype.dequeue;
    SqsQueue.prototype.dequeue = function (this: FauxqsQueue, maxCount: number, ...rest: unknown[]) {
      if (!this.isFifo()) {
        this.processTimers();
        this.messages = fairOrder(this.messages, inFlightByTenant(this.inflightMessages), Math.min(maxCount, 10));
      }
      return dequeue.call(this, maxCount, ...rest);
    };
  })();
  return fair;
}

/** fauxqs on a free loopback port, its standard queues fair (see {@link makeStandardQueuesFair}). */
export async function startFairFauxqs(): Promise<{ port: number; stop: () => Promise<void> }> {
  await makeStandardQueuesFair();
  const server = await startFauxqs({ port: 0, host: "127.0.0.1", logger: false });
  return { port: server.port, stop: () => server.stop() };
}
