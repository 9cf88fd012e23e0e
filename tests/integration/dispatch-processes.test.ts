import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { CALLER_ROLLOUT_FAIRNESS } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import { TextEnvironment, defaultEmbeddedSettings, embeddedCallerTask, embeddedSetup } from "@harness-s/envs";
import { startLocalStack, type LocalStack } from "@harness-s/functions/local";
import { DynamoRunningPlaces } from "@harness-s/adapters/stores";
import { localCredentials } from "@harness-s/adapters/local";
import { SERVE_WORKERS } from "../../packages/cli/src/runtime/serve-workers.ts";
import { startScriptedPolicy } from "../../packages/cli/src/commands/scripted-policy.ts";
import { addKey, startApi } from "../api-factory.ts";

// Issue 71: dispatch as deployed — several processes receiving from one queue (Lambda's invocations),
// each with its own clients and caches. A key's running places must hold across them (a lease per
// place, not a count in one process), and a process killed mid-rollout must lose nothing: its
// messages come back after the visibility timeout, each slot is stored once and metered once.
const setup = embeddedSetup(defaultEmbeddedSettings);
/** The dispatch queue's visibility timeout here (deployed: 6 minutes): a killed process's messages come back after it. */
const VISIBILITY_S = 5;
const PROCESSES = 4;
/**
 * Dispatch processes killed in the test of deaths: 3 in `npm test` (each kill costs a new process's start, about 4 CPU
 * s); the acceptance run's 10 with `HARNESS_S_DISPATCH_KILLS=10`.
 */
const KILLS = Number(process.env.HARNESS_S_DISPATCH_KILLS ?? 3);
/** A coordinator attempt's lease here (deployed: 16 minutes): a killed coordinator's run is taken over after it. */
const LEASE_MS = 8_000;
const TURN_MS = 50;
let inst: SeedInstance;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let policy: Awaited<ReturnType<typeof startScriptedPolicy>>;
let observer: { places: DynamoRunningPlaces; client: DynamoDBClient };
const keys: Record<string, string> = {};

beforeAll(async () => {
  inst = await setup.instance(1);
  // Twelve turns a rollout: a tool call eleven times, then submit (about 0.6 s at 50 ms a turn): long enough that a
  // key's 64 rollouts, were they let, would all run at once.
  const probe = embeddedCallerTask(setup.env, inst.train[0]!).tools.find((t) => !t.submit)!.name;
  policy = await startScriptedPolicy(
    (_, turn) => ({ tool: turn < 11 ? probe : "submit" }),
    () => TURN_MS,
  );
  stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async (id) => inst.train.find((t) => t.id === id) },
    allowLoopbackEndpoints: true,
    builtinEnvironments: { embedded: new TextEnvironment(setup.env) },
    visibilitySeconds: { dispatch: VISIBILITY_S, coordinator: VISIBILITY_S },
    workersOn: {
      module: SERVE_WORKERS.thread,
      data: {
        tasks: inst.train,
        allowLoopbackEndpoints: true,
        allowEndpointCidrs: [],
        rolloutsInProcess: true,
        coordinatorLeaseMs: LEASE_MS,
      },
      processes: { module: SERVE_WORKERS.process, count: { dispatch: PROCESSES, coordinator: 1 } },
    },
  });
  await stack.stores.pools.put(inst.evolution.pool);
  api = await startApi(stack.deps);
  keys["k-x"] = await addKey(stack.deps, "k-x", ["experiments"]);
  for (const key of ["k-a", "k-b"]) {
    keys[key] = await addKey(stack.deps, key, ["rescues"]);
    const res = await call(key, "POST", "/v1/policy-endpoints", {
      id: "mine",
      kind: "protocol-v2",
      url: policy.url,
      policy: "scripted",
    });
    expect(res.status, await res.clone().text()).toBe(201);
  }
  // The observer: a client of its own reading the key's places as the processes write them.
  const client = new DynamoDBClient({
    endpoint: stack.dynamoEndpoint,
    region: "us-east-1",
    credentials: localCredentials,
  });
  observer = { client, places: new DynamoRunningPlaces(DynamoDBDocumentClient.from(client), stack.tables) };
}, 180_000);
afterAll(async () => {
  observer?.client.destroy();
  await api?.close();
  await stack?.stop();
  await policy?.close();
}, 120_000);

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${keys[key]}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** A caller rescue of `perHarness` rollouts on each of `harnesses` of the pool's harnesses: its id. */
async function startRescue(key: string, harnesses: number, perHarness: number): Promise<string> {
  const pool = inst.evolution.pool;
  const res = await call(key, "POST", "/v1/rescues", {
    poolId: pool.id,
    harnesses: [pool.base, ...pool.siblings].slice(0, harnesses).map((h) => h.id),
    rolloutsPerHarness: perHarness,
    caller: {
      endpoint: "mine",
      environment: { kind: "builtin", id: "embedded" },
      task: embeddedCallerTask(setup.env, inst.train[0]!),
      maxTokens: 8,
    },
  });
  expect(res.status, await res.clone().text()).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

type Status = {
  status: string;
  completed: number;
  failed: { index: number; code: string }[];
  spent: { policyTokens: number };
};
const status = async (key: string, id: string) =>
  (await (await call(key, "GET", `/v1/rescues/${id}`)).json()) as Status;

/**
 * Reads, every 100 ms until `done` resolves, the key's live leases in the store and the most samples the policy
 * answered at once: the most of each seen.
 */
async function observed<T>(keyId: string, done: Promise<T>) {
  let finished = false;
  let leases = 0;
  let answering = 0;
  void done.finally(() => (finished = true)).catch(() => undefined);
  policy.takePeak();
  while (!finished) {
    leases = Math.max(leases, await observer.places.held(keyId, Date.now()));
    answering = Math.max(answering, policy.takePeak());
    await new Promise((r) => setTimeout(r, 100));
  }
  return { result: await done, leases, answering };
}

/** Polls the rescue until it is no longer running, or `withinMs` passes: its last status and when it ended. */
async function ended(key: string, id: string, withinMs: number): Promise<Status & { at: number }> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const s = await status(key, id);
    if (s.status !== "running" || Date.now() > deadline) return { ...s, at: Date.now() };
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A queue's messages waiting and in flight (SQS's approximate counts). */
async function queueDepth(url: string) {
  const sqs = new SQSClient({ endpoint: stack.sqsEndpoint, region: "us-east-1", credentials: localCredentials });
  try {
    const out = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: [
          "ApproximateNumberOfMessages",
          "ApproximateNumberOfMessagesNotVisible",
          "ApproximateNumberOfMessagesDelayed",
        ],
      }),
    );
    return out.Attributes;
  } finally {
    sqs.destroy();
  }
}

/** The slots whose spend the rescue's record holds (each added once: `spentSlots`), read from its item as stored. */
async function slotsWithSpend(jobId: string): Promise<Set<number>> {
  const doc = DynamoDBDocumentClient.from(observer.client);
  const out = await doc.send(
    new GetCommand({ TableName: stack.tables.RescueJobs, Key: { id: jobId }, ConsistentRead: true }),
  );
  return new Set([...((out.Item?.spentSlots as Set<number> | undefined) ?? [])].map(Number));
}

/** The rollouts stored under the job, by slot (each slot's items: one each when stored once). */
async function storedSlots(jobId: string): Promise<number[]> {
  return (await stack.stores.rollouts.summaries(jobId)).map((r) => r.index);
}

describe(`dispatch in ${PROCESSES} processes`, () => {
  it("a key's 64 rollouts never hold more than its running places across the processes; another key's rollout runs beside; nothing lost, each metered once", async () => {
    const meteredBefore = (await stack.stores.meter.get("k-a")).policyTokens;
    const a = await startRescue("k-a", 2, 32);
    const b = await startRescue("k-b", 1, 1);
    const { result, leases, answering } = await observed(
      "k-a",
      Promise.all([ended("k-a", a, 120_000), ended("k-b", b, 120_000)]),
    );
    const [sa, sb] = result;
    expect(sb.status).toBe("done");
    expect(sa.status).toBe("done");
    expect(sa.completed).toBe(64);
    // Samples of A and B answered at once: at most A's places and B's one.
    expect(answering).toBeLessThanOrEqual(CALLER_ROLLOUT_FAIRNESS.perKeyRunning + 1);
    expect(leases).toBeGreaterThan(0);
    expect(leases).toBeLessThanOrEqual(CALLER_ROLLOUT_FAIRNESS.perKeyRunning);
    expect((await storedSlots(a)).sort((x, y) => x - y)).toEqual(Array.from({ length: 64 }, (_, i) => i));
    // Every rollout samples the same tokens: A's meter and its rescue's spend are 64 times B's one rollout.
    expect(sb.spent.policyTokens).toBeGreaterThan(0);
    expect(sa.spent.policyTokens).toBe(64 * sb.spent.policyTokens);
    expect((await stack.stores.meter.get("k-a")).policyTokens - meteredBefore).toBe(64 * sb.spent.policyTokens);
    expect(stack.processes!.pids("dispatch")).toHaveLength(PROCESSES);
  }, 180_000);

  it(`a dispatch process killed mid-rescue ${KILLS} times: every slot stored once or failed with a code within the visibility timeout and 60 s, each metered once`, async () => {
    const one = await ended("k-b", await startRescue("k-b", 1, 1), 60_000);
    expect(one.status).toBe("done");
    const perRollout = one.spent.policyTokens;
    expect(perRollout).toBeGreaterThan(0);
    const meteredBefore = (await stack.stores.meter.get("k-a")).policyTokens;
    const restartsBefore = stack.processes!.restarts("dispatch");
    const a = await startRescue("k-a", 2, 32);
    let lastKill = Date.now();
    for (let i = 0; i < KILLS; i++) {
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 800));
      let pids = stack.processes!.pids("dispatch");
      while (!pids.length) {
        await new Promise((r) => setTimeout(r, 100));
        pids = stack.processes!.pids("dispatch");
      }
      process.kill(pids[Math.floor(Math.random() * pids.length)]!, "SIGKILL");
      lastKill = Date.now();
    }
    const end = await ended("k-a", a, (VISIBILITY_S + 60) * 1000 + 30_000);
    const dlq = await queueDepth(stack.queues.dispatch.dlqUrl);
    const main = await queueDepth(stack.queues.dispatch.url);
    expect(
      end.status,
      JSON.stringify({ completed: end.completed, failed: end.failed.slice(0, 3), dlq, main }),
    ).not.toBe("running");
    expect(end.at - lastKill).toBeLessThanOrEqual((VISIBILITY_S + 60) * 1000);
    for (const f of end.failed) expect(f.code).toMatch(/^[A-Z_]+$/);
    const stored = await storedSlots(a);
    const codes = end.failed.reduce<Record<string, number>>((n, f) => ({ ...n, [f.code]: (n[f.code] ?? 0) + 1 }), {});
    // The run's figures, for the docs: what the kills cost and how soon the rescue ended.
    console.info(
      `${KILLS} kills: ${stored.length} slots stored, failed ${JSON.stringify(codes)}, ended ${((end.at - lastKill) / 1000).toFixed(1)} s after the last kill`,
    );
    expect(new Set(stored).size).toBe(stored.length);
    expect(stored.length + end.failed.length).toBe(64);
    expect(end.completed).toBe(stored.length);
    // Metered once per finished slot: a killed attempt meters nothing, a finished one once (a slot whose spend was
    // recorded before its process died, and whose later deliveries died too, is failed ROLLOUT_LOST with its spend).
    const spentSlots = await slotsWithSpend(a);
    expect(stored.every((i) => spentSlots.has(i))).toBe(true);
    const failed = new Set(end.failed.map((f) => f.index));
    expect([...spentSlots].every((i) => stored.includes(i) || failed.has(i))).toBe(true);
    expect(end.spent.policyTokens).toBe(spentSlots.size * perRollout);
    expect((await stack.stores.meter.get("k-a")).policyTokens - meteredBefore).toBe(spentSlots.size * perRollout);
    expect(stack.processes!.restarts("dispatch") - restartsBefore).toBe(KILLS);
  }, 240_000);

  it("a coordinator process killed mid-run: its run is taken over once its lease lapses and ends done", async () => {
    const started = await call("k-x", "POST", "/v1/experiments", {
      seeds: [3],
      arms: ["grpo"],
      // Long enough after it shows "running" (its pool is evolved before) that the kill lands mid-run: with 8 steps the
      // run ended before the kill on a fast machine (done at its first attempt).
      train: { steps: 40, batchSize: 4, curveEvery: 0, auditEvery: 0 },
      evalSamples: 3,
      evalTasks: 6,
    });
    expect(started.status, await started.clone().text()).toBe(202);
    const { id } = (await started.json()) as { id: string };
    const read = async () =>
      (await (await call("k-x", "GET", `/v1/experiments/${id}`)).json()) as {
        status: string;
        attempts: number;
        progress: { done: number; label: string };
      };
    // Killed once it is running (its lease taken), before it ends.
    let seen = await read();
    for (let i = 0; i < 400 && seen.status !== "running"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      seen = await read();
    }
    expect(seen.status).toBe("running");
    const [coordinator] = stack.processes!.pids("coordinator");
    process.kill(coordinator!, "SIGKILL");
    const killedAt = Date.now();
    for (let i = 0; i < 600 && !["done", "failed", "stopped"].includes(seen.status); i++) {
      await new Promise((r) => setTimeout(r, 250));
      seen = await read();
    }
    expect(seen.status, seen.progress.label).toBe("done");
    expect(seen.attempts).toBeGreaterThanOrEqual(2);
    expect(Date.now() - killedAt).toBeLessThanOrEqual((VISIBILITY_S + 60) * 1000 + LEASE_MS);
    expect(stack.processes!.restarts("coordinator")).toBe(1);
  }, 240_000);
});
