import { CallerRescue, callerTaskOf } from "@harness-s/core/callers";
import type { CallerPolicies } from "@harness-s/core/dispatch";
import type { RolloutRunner } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { startOpenEnvServer } from "@harness-s/adapters/openenv";
import { embeddedCallerTask, type embeddedSetup } from "@harness-s/envs";
import { builtinOpenEnv } from "./env-serve.ts";
import type { CpuCounters } from "./cpu-split.ts";
import { startScriptedPolicy } from "./scripted-policy.ts";

/**
 * How long one status read of the bench's client waits for the rescue's end (`?wait=`, the API's long poll, as a
 * trainer follows a rescue).
 */
const STATUS_WAIT_SECONDS = 20;

/** A caller rescue's runner in this process, and its task. */
export type InProcessRunner = { run: RolloutRunner; task: ReturnType<typeof callerTaskOf> };

/**
 * What the rescue bench measures a service with: a rescue through it, the same rollouts in process, and its CPU
 * counters.
 */
export interface RescueBench {
  cpu: CpuCounters;
  close: () => Promise<void>;
  /** One rescue of `inFlight` rollouts through the service, followed until done: the rollouts it completed. */
  viaService: (ms: number, inFlight: number) => Promise<number>;
  /** The same rescue's runner, in this process. */
  runner: (ms: number) => Promise<InProcessRunner>;
  inProcess: (runner: InProcessRunner, inFlight: number) => Promise<number>;
}

/** The bench's task (one with failure tags) and its tools, as a caller names them. */
function benchTask(instance: SeedInstance, setup: ReturnType<typeof embeddedSetup>) {
  const task = instance.train.find((t) => t.tags.length > 0)!;
  return { task, tools: embeddedCallerTask(setup.env, task).tools };
}

/** What a bench's service is started beside: the scripted policies' URLs by latency, and the OpenEnv server's. */
export type BenchServers = { policies: ReadonlyMap<number, string>; envUrl: string };

/**
 * A bench: the scripted policies and the embedded environment over OpenEnv, then the service
 * `start` builds beside them (pushing what it starts to `closers`); everything is closed in
 * reverse at `close`, or at once when a start fails.
 */
export async function startBench(
  instance: SeedInstance,
  setup: ReturnType<typeof embeddedSetup>,
  turnMs: readonly number[],
  start: (servers: BenchServers, closers: (() => Promise<unknown>)[]) => Promise<Omit<RescueBench, "close">>,
): Promise<RescueBench> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const policies = await benchScriptedPolicies(instance, setup, turnMs, closers);
    const env = await startOpenEnvServer(
      await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }),
    );
    closers.push(env.close);
    return { ...(await start({ policies, envUrl: env.url }, closers)), close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * A scripted protocol-v2 policy per latency (a tool call, then submit), each closed with the bench: their URLs by
 * latency.
 */
async function benchScriptedPolicies(
  instance: SeedInstance,
  setup: ReturnType<typeof embeddedSetup>,
  turnMs: readonly number[],
  closers: (() => Promise<unknown>)[],
): Promise<Map<number, string>> {
  const probe = benchTask(instance, setup).tools.find((t) => !t.submit)!.name;
  const policies = new Map<number, string>();
  for (const ms of turnMs) {
    const policy = await startScriptedPolicy(
      (_, turn) => ({ tool: turn === 0 ? probe : "submit" }),
      () => ms,
    );
    closers.push(policy.close);
    policies.set(ms, policy.url);
  }
  return policies;
}

/** The API with the bench's key: JSON in, JSON out, any status but 2xx an error. */
export function benchClient(url: string, secret: string) {
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

/**
 * The bench's rescues at a service whose API `call` reaches (each policy registered as the key's
 * endpoint `scripted-<ms>ms`), and the same rollouts in process with `callers`' runner.
 */
export async function benchRescueParts(
  instance: SeedInstance,
  setup: ReturnType<typeof embeddedSetup>,
  call: ReturnType<typeof benchClient>,
  policies: ReadonlyMap<number, string>,
  envUrl: string,
  callers: CallerPolicies,
): Promise<Omit<RescueBench, "cpu" | "close">> {
  const { task, tools } = benchTask(instance, setup);
  for (const [ms, url] of policies)
    await call("POST", "/v1/policy-endpoints", {
      id: `scripted-${ms}ms`,
      kind: "protocol-v2",
      url,
      policy: "scripted",
    });
  const caller = (ms: number) => ({
    endpoint: `scripted-${ms}ms`,
    environment: { kind: "openenv", url: envUrl },
    task: { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction, tools },
    maxTokens: 16,
  });
  const pool = instance.evolution.pool;
  return {
    viaService: async (ms, inFlight) => {
      const started = await call("POST", "/v1/rescues", {
        poolId: pool.id,
        harnesses: [pool.base.id],
        rolloutsPerHarness: inFlight,
        caller: caller(ms),
      });
      for (;;) {
        // Answered when every slot has finished (more than n - 1 seen), or at the wait's end.
        const status = await call("GET", `/v1/rescues/${started.id}?wait=${STATUS_WAIT_SECONDS}&seen=${inFlight - 1}`);
        if (status.status !== "running") return status.completed as number;
      }
    },
    runner: async (ms) => {
      const parsed = CallerRescue.parse(caller(ms));
      const run = await callers.runner({ kind: "caller", ...parsed, keyId: "bench", weightVersion: 0 });
      return { run, task: callerTaskOf(parsed.task) };
    },
    inProcess: async (runner, inFlight) =>
      (await Promise.all(Array.from({ length: inFlight }, (_, i) => runner.run(runner.task, pool.base, i)))).length,
  };
}
