import { randomUUID } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { hashSecret } from "@harness-s/core/access";
import { CALLER_ROLLOUT_FAIRNESS } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import { DynamoRunningPlaces } from "@harness-s/adapters/stores";
import { localCredentials, startDynamoDbLocal } from "@harness-s/adapters/local";
import { TextEnvironment, embeddedCallerTask, type embeddedSetup } from "@harness-s/envs";
import { bodyLimitOf, createApp, listen } from "@harness-s/functions/api";
import { startLocalStack, type WorkerProcessesSpec } from "@harness-s/functions/local";
import { SERVE_WORKERS, type ServeWorkersData } from "../runtime/serve-workers.ts";
import { childPids, ownCpuSeconds, processCpuSeconds } from "./cpu-split.ts";
import { startScriptedPolicy } from "./scripted-policy.ts";
import { benchClient } from "./bench-rescue-parts.ts";

/** Dispatch processes each run of {@link benchDispatchProcesses} starts. */
export const DISPATCH_PROCESSES = [1, 2, 4] as const;
/** The busy key's rollouts (two harnesses of 32) beside the other key's one; 50 ms a turn, 12 turns a rollout. */
const BUSY = { harnesses: 2, perHarness: 32 } as const;
const TURN_MS = 50;
const TURNS = 12;

type Setup = ReturnType<typeof embeddedSetup>;

/** A local stack laid out as `serve --dispatch-processes n` lays it out, its API, and two keys with a policy each. */
export async function startProcessesBench(
  instance: SeedInstance,
  setup: Setup,
  over: {
    dynamoEndpoint: string;
    sqsEndpoint?: string;
    processes?: WorkerProcessesSpec["count"];
    onRolloutStored?: (jobId: string, index: number) => void;
  },
  policyUrl: string,
) {
  const data: ServeWorkersData = {
    tasks: [...instance.train],
    allowLoopbackEndpoints: true,
    allowEndpointCidrs: [],
    ...(over.processes ? { rolloutsInProcess: true } : {}),
  };
  const stack = await startLocalStack({
    dynamoEndpoint: over.dynamoEndpoint,
    ...(over.sqsEndpoint ? { sqsEndpoint: over.sqsEndpoint } : {}),
    tasks: { get: async (id) => instance.train.find((t) => t.id === id) },
    allowLoopbackEndpoints: true,
    builtinEnvironments: { embedded: new TextEnvironment(setup.env) },
    ...(over.onRolloutStored ? { onRolloutStored: over.onRolloutStored } : {}),
    workersOn: {
      module: SERVE_WORKERS.thread,
      data,
      ...(over.processes ? { processes: { module: SERVE_WORKERS.process, count: over.processes } } : {}),
    },
  });
  try {
    const api = await listen(createApp(stack.deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(stack.deps) });
    await stack.stores.pools.put(instance.evolution.pool);
    const calls = new Map<string, ReturnType<typeof benchClient>>();
    for (const key of ["busy", "other"]) {
      const secret = `bench-${randomUUID()}`;
      await stack.deps.keys.put({ id: key, hash: hashSecret(secret), scopes: ["rescues"] });
      const call = benchClient(api.url, secret);
      await call("POST", "/v1/policy-endpoints", {
        id: "mine",
        kind: "protocol-v2",
        url: policyUrl,
        policy: "scripted",
      });
      calls.set(key, call);
    }
    const task = embeddedCallerTask(setup.env, instance.train[0]!);
    const pool = instance.evolution.pool;
    /** Starts a rescue of `perHarness` rollouts on each of `harnesses` harnesses for `key`: its id. */
    const rescue = async (key: string, harnesses: number, perHarness: number): Promise<string> =>
      (
        await calls.get(key)!("POST", "/v1/rescues", {
          poolId: pool.id,
          harnesses: [pool.base, ...pool.siblings].slice(0, harnesses).map((h) => h.id),
          rolloutsPerHarness: perHarness,
          caller: { endpoint: "mine", environment: { kind: "builtin", id: "embedded" }, task, maxTokens: 8 },
        })
      ).id;
    /** Waits for the rescue to end (the API's long poll): its status. */
    const ended = async (key: string, id: string) => {
      for (;;) {
        const s = await calls.get(key)!("GET", `/v1/rescues/${id}?wait=20`);
        if (s.status !== "running") return s as { status: string; completed: number };
      }
    };
    return {
      stack,
      rescue,
      ended,
      close: async () => {
        await api.close();
        await stack.stop();
      },
    };
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

/** One row of {@link benchDispatchProcesses}. */
export interface ProcessesRow {
  processes: number;
  /** The most live leases of the busy key an observer read in the store, and the most samples answered at once. */
  leases: number;
  answering: number;
  lost: number;
  conflictsPerRollout: number;
  writesPerRollout: number;
  rolloutsPerCpuSecond: number;
  seconds: number;
}

/**
 * For 1, 2 and 4 dispatch processes (each with its own clients and caches, as Lambda invocations are; one DynamoDB
 * Local for all): a key's 64 caller rollouts at 50 ms a turn beside another key's one, an observer reading the busy
 * key's leases from the store every 100 ms. Per row: the most leases and samples at once, rollouts lost, conflicts and
 * place writes per rollout, rollouts per CPU second (this process, the dispatch processes and DynamoDB Local).
 */
export async function benchDispatchProcesses(instance: SeedInstance, setup: Setup): Promise<ProcessesRow[]> {
  const probe = embeddedCallerTask(setup.env, instance.train[0]!).tools.find((t) => !t.submit)!.name;
  const policy = await startScriptedPolicy(
    (_, turn) => ({ tool: turn < TURNS - 1 ? probe : "submit" }),
    () => TURN_MS,
  );
  const dynamo = await startDynamoDbLocal();
  const client = new DynamoDBClient({ endpoint: dynamo.endpoint, region: "us-east-1", credentials: localCredentials });
  const java = childPids("java");
  const rows: ProcessesRow[] = [];
  try {
    for (const n of DISPATCH_PROCESSES) {
      const bench = await startProcessesBench(
        instance,
        setup,
        { dynamoEndpoint: dynamo.endpoint, processes: { dispatch: n } },
        policy.url,
      );
      try {
        rows.push(
          await measureProcesses(
            n,
            bench,
            policy,
            java,
            new DynamoRunningPlaces(DynamoDBDocumentClient.from(client), bench.stack.tables),
          ),
        );
      } finally {
        await bench.close();
      }
    }
  } finally {
    client.destroy();
    await dynamo.stop();
    await policy.close();
  }
  return rows;
}

async function measureProcesses(
  n: number,
  bench: Awaited<ReturnType<typeof startProcessesBench>>,
  policy: Awaited<ReturnType<typeof startScriptedPolicy>>,
  java: number[],
  observer: DynamoRunningPlaces,
): Promise<ProcessesRow> {
  const { stack } = bench;
  // Warm: one rescue of 8 for the busy key (connections, JITs), not measured.
  await bench.ended("busy", await bench.rescue("busy", 1, 8));
  const pids = stack.processes!.pids("dispatch");
  const cpu = () => ownCpuSeconds() + [...pids, ...java].reduce((s, pid) => s + (processCpuSeconds(pid) ?? 0), 0);
  const [cpu0, stats0, t0] = [cpu(), await stack.processes!.placeStats("dispatch"), performance.now()];
  policy.takePeak();
  const [busy, other] = await Promise.all([
    bench.rescue("busy", BUSY.harnesses, BUSY.perHarness),
    bench.rescue("other", 1, 1),
  ]);
  let finished = false;
  const done = Promise.all([bench.ended("busy", busy), bench.ended("other", other)]).finally(() => (finished = true));
  let leases = 0;
  let answering = 0;
  while (!finished) {
    leases = Math.max(leases, await observer.held("busy", Date.now()));
    answering = Math.max(answering, policy.takePeak());
    await new Promise((r) => setTimeout(r, 100));
  }
  await done;
  const seconds = (performance.now() - t0) / 1000;
  const [cpu1, stats1] = [cpu(), await stack.processes!.placeStats("dispatch")];
  const rollouts = BUSY.harnesses * BUSY.perHarness + 1;
  const stored =
    (await stack.stores.rollouts.summaries(busy)).length + (await stack.stores.rollouts.summaries(other)).length;
  return {
    processes: n,
    leases,
    answering,
    lost: rollouts - stored,
    conflictsPerRollout: (stats1.conflicts - stats0.conflicts) / rollouts,
    writesPerRollout: (stats1.writes - stats0.writes) / rollouts,
    rolloutsPerCpuSecond: rollouts / (cpu1 - cpu0),
    seconds,
  };
}

/** The rows as printed: the cap beside the most seen, and each figure against 1 process's in the same run. */
export function formatProcessesRows(rows: readonly ProcessesRow[]): string[] {
  const one = rows.find((r) => r.processes === 1);
  const cap = CALLER_ROLLOUT_FAIRNESS.perKeyRunning;
  return [
    `dispatch processes         (a key's ${BUSY.harnesses * BUSY.perHarness} caller rollouts, ${TURNS} turns at ${TURN_MS} ms, beside another key's 1; its running places: ${cap})`,
    ...rows.map(
      (r) =>
        `  ${String(r.processes).padStart(2)} process${r.processes === 1 ? " " : "es"}             most leases ${String(r.leases).padStart(2)} (cap ${cap}), most samples at once ${String(r.answering).padStart(2)}, lost ${r.lost}, ` +
        `conflicts/rollout ${r.conflictsPerRollout.toFixed(3)}, place writes/rollout ${r.writesPerRollout.toFixed(2)}, ` +
        `rollouts/CPU s ${r.rolloutsPerCpuSecond.toFixed(1)}${one && r !== one ? ` (${(r.rolloutsPerCpuSecond / one.rolloutsPerCpuSecond).toFixed(2)}× 1 process's)` : ""}, ${r.seconds.toFixed(1)} s`,
    ),
  ];
}
