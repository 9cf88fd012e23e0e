import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { hashSecret } from "@harness-s/core/access";
import type { SeedInstance } from "@harness-s/core/experiment";
import type { embeddedSetup } from "@harness-s/envs";
import { listen } from "@harness-s/functions/api";
import { bodyLimitOf, createApp } from "@harness-s/functions/api";
import { startFauxqsThread } from "@harness-s/functions/local";
import { startLocalStack } from "@harness-s/functions/local";
import {
  childPids,
  machineBusySeconds,
  ownCpuSeconds,
  processCpuSeconds,
  threadIds,
  threadsCpuSeconds,
  type CpuCounters,
} from "./cpu-split.ts";
import { SERVE_WORKERS } from "../runtime/serve-workers.ts";
import { benchClient, benchRescueParts, startBench, type RescueBench } from "./bench-rescue-parts.ts";

/**
 * The rescue bench's parts: a scripted protocol-v2 policy per latency (each registered as the
 * key's endpoint `scripted-<ms>ms`), the embedded environment over OpenEnv, a local stack laid out
 * as `harness-s serve` lays it out (the workers on a thread of their own, fauxqs on another), the
 * API over HTTP, and CPU counters for the process, the workers' thread, fauxqs's thread,
 * DynamoDB Local's JVM and the whole machine.
 */
export function startRescueBench(
  instance: SeedInstance,
  setup: ReturnType<typeof embeddedSetup>,
  turnMs: readonly number[],
): Promise<RescueBench> {
  return startBench(instance, setup, turnMs, async ({ policies, envUrl }, closers) => {
    const { fauxqs, cpu } = await startCountedFauxqs();
    closers.push(fauxqs.stop);
    // The workers on a thread of their own, as `harness-s serve` runs them: its threads are the ones the stack started.
    const before = threadIds();
    const workersOn = {
      module: SERVE_WORKERS.thread,
      data: { tasks: [], allowLoopbackEndpoints: true, allowEndpointCidrs: [] },
    };
    const stack = await startLocalStack({
      tasks: { get: async () => undefined },
      allowLoopbackEndpoints: true,
      sqsEndpoint: fauxqs.url,
      workersOn,
    });
    closers.push(stack.stop);
    const workerTids = new Set([...threadIds()].filter((t) => !before.has(t)));
    cpu.workers = () => threadsCpuSeconds(workerTids);
    const java = childPids("java");
    cpu.dynamoDbLocal = () =>
      java.length
        ? java.reduce<number | undefined>((a, pid) => (a === undefined ? a : sumOr(a, processCpuSeconds(pid))), 0)
        : undefined;
    const api = await listen(createApp(stack.deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(stack.deps) });
    closers.push(api.close);
    await stack.stores.pools.put(instance.evolution.pool);
    const secret = `bench-${randomUUID()}`;
    await stack.deps.keys.put({ id: "bench", hash: hashSecret(secret), scopes: ["rescues"] });
    const parts = await benchRescueParts(
      instance,
      setup,
      benchClient(api.url, secret),
      policies,
      envUrl,
      stack.deps.callers!,
    );
    return { ...parts, cpu };
  });
}

const sumOr = (a: number, b: number | undefined) => (b === undefined ? undefined : a + b);

/**
 * fauxqs on a thread of its own, and the CPU counters: that thread's (the threads that appeared
 * when it started; libuv's pool is started first so its threads are not among them), the rest of
 * this process, and the whole machine.
 */
async function startCountedFauxqs(): Promise<{ fauxqs: { url: string; stop: () => Promise<void> }; cpu: CpuCounters }> {
  await stat(".");
  const before = threadIds();
  const thread = await startFauxqsThread();
  const tids = new Set([...threadIds()].filter((t) => !before.has(t)));
  const fauxqs = () => threadsCpuSeconds(tids);
  return {
    fauxqs: { url: `http://127.0.0.1:${thread.port}`, stop: thread.stop },
    cpu: { process: ownCpuSeconds, fauxqs, machine: machineBusySeconds },
  };
}
