import type { SeedInstance } from "@harness-s/core/experiment";
import { startDynamoDbLocal } from "@harness-s/adapters/local";
import { embeddedCallerTask, type embeddedSetup } from "@harness-s/envs";
import { startFauxqsThread } from "@harness-s/functions/local";
import { startLatencyProxy } from "./latency-proxy.ts";
import { startScriptedPolicy } from "./scripted-policy.ts";
import { startProcessesBench } from "./bench-dispatch.ts";

/** Rescue sizes the round trips are counted for. */
export const ROUND_TRIP_SIZES = [1, 8, 32] as const;
/** The latency added to every request of one service while the other answers as it does (ms). */
const ADDED_MS = 250;
/** Rounds per size, each timing one rescue as the stores answer, one with DynamoDB slowed, one with SQS slowed. */
const REPEATS = 7;

/**
 * What a request costs deployed, as AWS states it: DynamoDB "single-digit millisecond" reads and writes
 * (https://aws.amazon.com/dynamodb/), taken here as 5 ms; SQS "typical latencies for SendMessage, ReceiveMessage, and
 * DeleteMessage API requests are in the tens or low hundreds of milliseconds" (https://aws.amazon.com/sqs/faqs/), taken
 * as 20 ms and 100 ms.
 */
export const CITED_LATENCY_MS = { dynamo: 5, sqsLow: 20, sqsHigh: 100 } as const;

/** One size's count: sequential store and queue requests between the POST and its last slot stored. */
export interface RoundTripRow {
  size: number;
  /** The median milliseconds from the POST to the last slot stored: as the stores answer, and with each one slowed. */
  ms: { none: number; dynamo: number; sqs: number };
  store: number;
  queue: number;
}

type Setup = ReturnType<typeof embeddedSetup>;

/**
 * Counts, for a caller rescue of 1, 8 and 32 rollouts, the store and queue requests one after another on its path
 * from the POST to its last slot stored: the same rescue timed with {@link ADDED_MS} added to every DynamoDB request
 * (a proxy in front of DynamoDB Local), then to every SQS request (one in front of fauxqs), against none; the time
 * added over the latency added is the number of requests in sequence. The stack is laid out as `serve` lays it out.
 */
export async function benchRoundTrips(instance: SeedInstance, setup: Setup): Promise<RoundTripRow[]> {
  const probe = embeddedCallerTask(setup.env, instance.train[0]!).tools.find((t) => !t.submit)!.name;
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const policy = await startScriptedPolicy((_, turn) => ({ tool: turn === 0 ? probe : "submit" }));
    closers.push(policy.close);
    const dynamo = await startDynamoDbLocal();
    closers.push(dynamo.stop);
    const fauxqs = await startFauxqsThread();
    closers.push(fauxqs.stop);
    const dproxy = await startLatencyProxy(dynamo.endpoint);
    const sproxy = await startLatencyProxy(`http://127.0.0.1:${fauxqs.port}`);
    closers.push(dproxy.stop, sproxy.stop);
    const stored = new Map<string, { n: number; resolve: () => void }>();
    // Slots stored before the POST answered (the worker may be quicker than the API's reply), by rescue.
    const early = new Map<string, number>();
    const bench = await startProcessesBench(
      instance,
      setup,
      {
        dynamoEndpoint: dproxy.url,
        sqsEndpoint: sproxy.url,
        onRolloutStored: (jobId) => {
          const w = stored.get(jobId);
          if (!w) early.set(jobId, (early.get(jobId) ?? 0) + 1);
          else if (--w.n === 0) w.resolve();
        },
      },
      policy.url,
    );
    closers.push(bench.close);
    /** Milliseconds from the POST to the rescue's last slot stored. */
    const timed = async (size: number) => {
      let resolve!: () => void;
      const all = new Promise<void>((r) => (resolve = r));
      const t0 = performance.now();
      const id = await bench.rescue("busy", 1, size);
      stored.set(id, { n: size - (early.get(id) ?? 0), resolve });
      if (stored.get(id)!.n <= 0) resolve();
      await all;
      const ms = performance.now() - t0;
      // Read to its end (untimed): the key's rescue slots come back when a status read sees it done.
      await bench.ended("busy", id);
      return ms;
    };
    const median = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)]!;
    const rows: RoundTripRow[] = [];
    for (const size of ROUND_TRIP_SIZES) {
      for (let i = 0; i < 2; i++) await timed(size); // warm at this size: connections, JITs, invocations
      // The three ways in turns, a round at a time: a drift of the machine weighs on each alike.
      const ways = { none: [] as number[], store: [] as number[], queue: [] as number[] };
      for (let i = 0; i < REPEATS; i++) {
        ways.none.push(await timed(size));
        dproxy.setDelay(ADDED_MS);
        ways.store.push(await timed(size));
        dproxy.setDelay(0);
        sproxy.setDelay(ADDED_MS);
        ways.queue.push(await timed(size));
        sproxy.setDelay(0);
      }
      const [none, slowStore, slowQueue] = [median(ways.none), median(ways.store), median(ways.queue)];
      rows.push({
        size,
        ms: { none, dynamo: slowStore, sqs: slowQueue },
        store: (slowStore - none) / ADDED_MS,
        queue: (slowQueue - none) / ADDED_MS,
      });
    }
    return rows;
  } finally {
    for (const close of closers.reverse()) await close();
  }
}

/** The rows as printed, with what the counts cost at the cited latencies. */
export function formatRoundTrips(rows: readonly RoundTripRow[]): string[] {
  const { dynamo, sqsLow, sqsHigh } = CITED_LATENCY_MS;
  return [
    `rescue round trips         (store and queue requests in sequence from the POST to the last slot stored: ${ADDED_MS} ms added to each answer of one, time added / ${ADDED_MS} ms; medians of ${REPEATS} rounds; deployed at DynamoDB ${dynamo} ms, SQS ${sqsLow}–${sqsHigh} ms a request)`,
    ...rows.map((r) => {
      const low = r.store * dynamo + r.queue * sqsLow;
      const high = r.store * dynamo + r.queue * sqsHigh;
      return (
        `  rescue of ${String(r.size).padStart(2)}              store ${r.store.toFixed(1)}, queue ${r.queue.toFixed(1)} in sequence ` +
        `(${r.ms.none.toFixed(0)} ms here; +${(r.ms.dynamo - r.ms.none).toFixed(0)} / +${(r.ms.sqs - r.ms.none).toFixed(0)} ms slowed) ` +
        `→ ${low.toFixed(0)}–${high.toFixed(0)} ms of requests deployed`
      );
    }),
  ];
}
