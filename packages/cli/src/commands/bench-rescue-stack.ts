import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { startOpenEnvServer } from "@harness-s/adapters";
import { CallerRescue, callerTaskOf } from "@harness-s/core/rescue";
import type { RolloutRunner } from "@harness-s/core";
import { hashSecret } from "@harness-s/core/access";
import type { SeedInstance } from "@harness-s/core/experiment";
import { embeddedCallerTask, type embeddedSetup } from "@harness-s/envs";
import { listen } from "@harness-s/functions/api/local";
import { bodyLimitOf, createApp } from "@harness-s/functions/api/app";
import { startFauxqsThread } from "@harness-s/functions/local/fauxqs-thread";
import { startLocalStack } from "@harness-s/functions/local/stack";
import { builtinOpenEnv } from "./env-serve.ts";
import { childPids, machineBusySeconds, processCpuSeconds, threadIds, threadsCpuSeconds, type CpuCounters } from "./cpu-split.ts";
import { startScriptedPolicy } from "./scripted-policy.ts";

/** The entry of `serve`'s workers' thread (its data: `ServeWorkersData`): the bench runs the workers as serve does. */
const SERVE_WORKERS_ENTRY = new URL("../runtime/serve-workers.mjs", import.meta.url);

/** How long one status read of the bench's client waits for the rescue's end (`?wait=`, the API's long poll, as a trainer follows a rescue). */
const STATUS_WAIT_SECONDS = 20;

/**
 * The rescue bench's parts: a scripted protocol-v2 policy per latency (each registered as the
 * key's endpoint `scripted-<ms>ms`), the embedded environment over OpenEnv, a local stack laid out
 * as `harness-s serve` lays it out (the workers on a thread of their own, fauxqs on another), the
 * API over HTTP, and CPU counters for the process, the workers' thread, fauxqs's thread,
 * DynamoDB Local's JVM and the whole machine.
 */
export async function startRescueBench(instance: SeedInstance, setup: ReturnType<typeof embeddedSetup>, turnMs: readonly number[]) {
  const task = instance.train.find((t) => t.tags.length > 0)!;
  const tools = embeddedCallerTask(setup.env, task).tools;
  const probe = tools.find((t) => !t.submit)!.name;
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const policies = new Map<number, string>();
    for (const ms of turnMs) {
      const policy = await startScriptedPolicy(
        (_, turn) => ({ tool: turn === 0 ? probe : "submit" }),
        () => ms,
      );
      closers.push(policy.close);
      policies.set(ms, policy.url);
    }
    const env = await startOpenEnvServer(await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }));
    closers.push(env.close);
    const { fauxqs, cpu } = await startCountedFauxqs();
    closers.push(fauxqs.stop);
    // The workers on a thread of their own, as `harness-s serve` runs them: its threads are the ones the stack started.
    const before = threadIds();
    const workersOn = { module: SERVE_WORKERS_ENTRY, data: { tasks: [], allowLoopbackEndpoints: true, allowEndpointCidrs: [] } };
    const stack = await startLocalStack({ tasks: { get: async () => undefined }, allowLoopbackEndpoints: true, sqsEndpoint: fauxqs.url, workersOn });
    closers.push(stack.stop);
    const workerTids = new Set([...threadIds()].filter((t) => !before.has(t)));
    cpu.workers = () => threadsCpuSeconds(workerTids);
    const java = childPids("java");
    cpu.dynamoDbLocal = () => (java.length ? java.reduce<number | undefined>((a, pid) => (a === undefined ? a : sumOr(a, processCpuSeconds(pid))), 0) : undefined);
    const api = await listen(createApp(stack.deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(stack.deps) });
    closers.push(api.close);
    await stack.stores.pools.put(instance.evolution.pool);
    const secret = `bench-${randomUUID()}`;
    await stack.deps.keys.put({ id: "bench", hash: hashSecret(secret), scopes: ["rescues"] });
    const call = client(api.url, secret);
    for (const [ms, url] of policies) await call("POST", "/v1/policy-endpoints", { id: `scripted-${ms}ms`, kind: "protocol-v2", url, policy: "scripted" });
    const caller = (ms: number) => ({
      endpoint: `scripted-${ms}ms`,
      environment: { kind: "openenv", url: env.url },
      task: { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction, tools },
      maxTokens: 16,
    });
    const pool = instance.evolution.pool;
    return {
      cpu,
      close,
      /** One rescue of `inFlight` rollouts through the service, followed until done: the rollouts it completed. */
      viaService: async (ms: number, inFlight: number) => {
        const started = await call("POST", "/v1/rescues", { poolId: pool.id, harnesses: [pool.base.id], rolloutsPerHarness: inFlight, caller: caller(ms) });
        for (;;) {
          // Answered when every slot has finished (more than n - 1 seen), or at the wait's end.
          const status = await call("GET", `/v1/rescues/${started.id}?wait=${STATUS_WAIT_SECONDS}&seen=${inFlight - 1}`);
          if (status.status !== "running") return status.completed as number;
        }
      },
      /** The same rescue's runner, in this process. */
      runner: async (ms: number) => {
        const parsed = CallerRescue.parse(caller(ms));
        const run = await stack.deps.callers!.runner({ kind: "caller", ...parsed, keyId: "bench", weightVersion: 0 });
        return { run, task: callerTaskOf(parsed.task) };
      },
      inProcess: async (runner: { run: RolloutRunner; task: ReturnType<typeof callerTaskOf> }, inFlight: number) =>
        (await Promise.all(Array.from({ length: inFlight }, (_, i) => runner.run(runner.task, pool.base, i)))).length,
    };
  } catch (err) {
    await close();
    throw err;
  }
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
  const self = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  };
  const fauxqs = () => threadsCpuSeconds(tids);
  return {
    fauxqs: { url: `http://127.0.0.1:${thread.port}`, stop: thread.stop },
    cpu: { process: self, fauxqs, machine: machineBusySeconds },
  };
}

/** The API with the bench's key: JSON in, JSON out, any status but 2xx an error. */
function client(url: string, secret: string) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  };
}
