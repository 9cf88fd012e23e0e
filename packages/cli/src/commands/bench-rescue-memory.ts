import { randomUUID } from "node:crypto";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { HttpEndpointProber } from "@harness-s/adapters/net";
import { MemoryPolicyEndpointStore, MemoryQueue, MemoryRescueSlots } from "@harness-s/adapters/stores";
import { systemClock } from "@harness-s/core";
import { hashSecret } from "@harness-s/core/access";
import type { SeedInstance } from "@harness-s/core/experiment";
import type { Envelope, MessageQueue } from "@harness-s/core/messaging";
import { LocalRescueProgress, tellingStores } from "@harness-s/core/rescue";
import { rolloutRunners } from "@harness-s/core/dispatch";
import type { embeddedSetup } from "@harness-s/envs";
import { bodyLimitOf, createApp } from "@harness-s/functions/api";
import { listen, memoryApiDeps } from "@harness-s/functions/api";
import { createDispatchHandler } from "@harness-s/functions/dispatch";
import { API_LAMBDA_MAX_BODY_BYTES, WORKERS } from "../../../../infra/settings.ts";
import { benchClient, benchRescueParts, startBench, type RescueBench } from "./bench-rescue-parts.ts";
import { machineBusySeconds, ownCpuSeconds } from "./cpu-split.ts";

/**
 * The rescue bench's service on in-memory stores and an in-memory queue, in this one thread: the
 * same API over HTTP, the same rescue use-cases (the key's places, the record, the budget, the
 * spend, the meter, the long poll told of each store) and the same dispatch handler with its
 * fairness, fed each batch as Lambda's event source would feed it, with no DynamoDB Local, no
 * fauxqs and no AWS SDK between them. What it costs against in process is the service's own
 * code; what the local stack costs beyond it is its store and queue requests.
 */
export function startMemoryRescueBench(
  instance: SeedInstance,
  setup: ReturnType<typeof embeddedSetup>,
  turnMs: readonly number[],
): Promise<RescueBench> {
  return startBench(instance, setup, turnMs, async ({ policies, envUrl }, closers) => {
    const outbound = { allowLoopback: true, allowCidrs: [] };
    const progress = new LocalRescueProgress();
    const dispatch = new EventSourceQueue();
    const endpoints = new MemoryPolicyEndpointStore();
    const callers = new CallerPolicyRunners({ endpoints, outbound, clock: systemClock });
    const deps = memoryApiDeps({
      prober: new HttpEndpointProber(outbound, systemClock),
      endpoints,
      callers,
      progress,
      dispatch,
      maxBodyBytes: API_LAMBDA_MAX_BODY_BYTES,
    });
    dispatch.handler = createDispatchHandler({
      pools: deps.pools,
      tasks: deps.tasks,
      jobs: deps.jobs,
      meter: deps.meter,
      rollouts: tellingStores(deps.rollouts, (jobId, index) => progress.stored(jobId, index)),
      runners: rolloutRunners({ caller: callers }),
      fairness: { slots: new MemoryRescueSlots(), clock: systemClock, requeue: dispatch },
      maxReceives: WORKERS.dispatch.retry,
      logger: { event: () => undefined },
    });
    const api = await listen(createApp(deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(deps) });
    closers.push(api.close, () => dispatch.drained());
    await deps.pools.put(instance.evolution.pool);
    const secret = `bench-${randomUUID()}`;
    await deps.keys.put({ id: "bench", hash: hashSecret(secret), scopes: ["rescues"] });
    const parts = await benchRescueParts(instance, setup, benchClient(api.url, secret), policies, envUrl, callers);
    return { ...parts, cpu: { process: ownCpuSeconds, machine: machineBusySeconds } };
  });
}

type DispatchHandler = ReturnType<typeof createDispatchHandler>;

/**
 * A queue that hands each send to the dispatch handler as one SQS event, after its delay, as
 * Lambda's event source hands a batch over; a record the handler reports failed comes back on
 * its next receive, and its last receive is the handler's to record (`maxReceives`).
 */
export class EventSourceQueue implements MessageQueue {
  handler: DispatchHandler | undefined;
  private readonly checked = new MemoryQueue();
  private readonly inFlight = new Set<Promise<void>>();
  private next = 0;

  async send(messages: Envelope[], opts: { delaySeconds?: number } = {}): Promise<void> {
    await this.checked.send(messages, opts);
    this.deliver(this.checked.take(), 1, (opts.delaySeconds ?? 0) * 1000);
  }

  /** Waits for every batch handed over to be handled. */
  async drained(): Promise<void> {
    while (this.inFlight.size) await Promise.all(this.inFlight);
  }

  private deliver(envelopes: readonly Envelope[], receive: number, afterMs: number): void {
    const records = envelopes.map((e) => ({ id: `m${++this.next}`, e }));
    const handled = new Promise<void>((resolve) => setTimeout(resolve, afterMs))
      .then(() => this.handler!({ Records: records.map(({ id, e }) => sqsRecord(id, e, receive)) }))
      .then(({ batchItemFailures }) => {
        const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier));
        const again = records.filter((r) => failed.has(r.id)).map((r) => r.e);
        if (again.length && receive < WORKERS.dispatch.retry) this.deliver(again, receive + 1, 0);
      });
    this.inFlight.add(handled);
    void handled.finally(() => this.inFlight.delete(handled));
  }
}

const sqsRecord = (messageId: string, envelope: Envelope, receive: number) => ({
  messageId,
  receiptHandle: messageId,
  attributes: { ApproximateReceiveCount: String(receive) },
  messageAttributes: {},
  md5OfBody: "",
  eventSource: "aws:sqs" as const,
  eventSourceARN: "arn:aws:sqs:local:0:bench-dispatch",
  awsRegion: "local",
  body: JSON.stringify(envelope),
});
