import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { ServedModel, servedOffers } from "@harness-s/core/models";
import { localCredentials } from "@harness-s/adapters/local";
import { defaultEmbeddedSettings, embeddedSetups } from "@harness-s/envs";
import { startLocalStack, type LocalStack } from "@harness-s/functions/local";
import { ExperimentFlags, experiment } from "../../packages/cli/src/declared/experiment.ts";
import { ExperimentSetups, experimentOffers } from "../../packages/cli/src/runtime/experiment-setups.ts";
import { RunPolicyEndpoints, localQueuedExperiment } from "../../packages/cli/src/runtime/local-aws.ts";
import { addKey, startApi } from "../api-factory.ts";
import { sharedPolicyWorker } from "../run-policy-worker.ts";
import { type EnvServeProcess, startEnvServe, trainerEndpoint } from "../../scripts/serve-process.ts";

// Issue 57, item 1: an experiment's environment, end to end through the local stack as `serve`
// wires it (DynamoDB Local, fauxqs, the coordinator and dispatch workers, a policy worker with the
// tiny model): DBBench on SQLite and a caller's own OpenEnv server (`env-serve --env embedded` in
// a process of its own, its tasks posted as data) each run to `done` with per-arm results; what
// is refused (an environment not offered, a URL in a refused range, a task list without a
// held-out split) is a 400 with its code, nothing recorded, nothing metered. The tiny model has
// random weights (it solves nothing): this checks the machinery, not what is learned. Kept tiny:
// one seed, two arms, one step of one group of two, one task per evaluation, three samples.
// The policy worker is the integration run's shared one (tests/shared-policy-worker.ts).
const WORKER_TOKEN = inject("policyWorker").token;
const TINY = ServedModel.parse({ name: "tiny", parameters: 1_000, contextTokens: 2_048, chatTemplate: "chatml" });
const families = { dbbench: { engine: "sqlite" }, appworld: { appworldServers: 1 } };
const tiny = {
  seeds: [1],
  arms: ["grpo", "harness-s"],
  train: { steps: 1, batchSize: 1, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 },
  evalTasks: 1,
  evalSamples: 3,
};
let worker: { url: string };
let envServe: EnvServeProcess;
/** A proxy in front of env-serve counting the sessions opened through it: the caller's URL as posted. */
let counted: { url: string; sessions: number; server: Server };
let setups: ExperimentSetups;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let runner: string;
let other: string;
const logged: string[] = [];
/** The service's DBBench summary, for the CLI's run of the same configuration. */
let dbbenchSummary: unknown;

/** Forwards every WebSocket upgrade to `target`, counting them. */
async function countingProxy(target: string): Promise<typeof counted> {
  const { hostname, port } = new URL(target);
  const server = createServer((_req, res) => res.writeHead(404).end());
  const proxy = { url: "", sessions: 0, server };
  server.on("upgrade", (req, socket, head) => {
    proxy.sessions++;
    const upstream = connect(Number(port), hostname, () => {
      upstream.write(
        `${req.method} ${req.url} HTTP/1.1\r\n${Object.entries(req.headers)
          .map(([k, v]) => `${k}: ${v}`)
          .join("\r\n")}\r\n\r\n`,
      );
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    upstream.on("error", () => socket.destroy());
    socket.on("error", () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return proxy;
}

beforeAll(async () => {
  [worker, envServe] = await Promise.all([sharedPolicyWorker(), startEnvServe()]);
  counted = await countingProxy(envServe.url);
  const embedded = embeddedSetups(defaultEmbeddedSettings);
  const models = [{ name: "tiny", url: worker.url, token: WORKER_TOKEN }];
  setups = new ExperimentSetups({
    embedded,
    families,
    models,
    outbound: { allowLoopback: true },
    io: {
      log: (line) => logged.push(line),
      python: async () => "python3",
      progress: () => ({ update: () => undefined, stop: () => undefined }),
      prepareOutDir: async () => undefined,
    },
    watchMs: 200,
  });
  const endpoints = new RunPolicyEndpoints(embedded("test").env);
  stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async () => undefined },
    policies: endpoints,
    prepareExperiment: localQueuedExperiment(setups, endpoints),
    allowLoopbackEndpoints: true,
    offers: servedOffers([TINY], experimentOffers({ families, models })),
  });
  runner = await addKey(stack.deps, "k-runner", ["experiments", "rescues"]);
  other = await addKey(stack.deps, "k-other", ["experiments", "rescues"]);
  api = await startApi(stack.deps);
}, 600_000);
afterAll(async () => {
  await api?.close();
  await setups?.stopAll();
  await stack?.stop();
  counted?.server.close();
  envServe?.proc.kill("SIGTERM");
}, 60_000);

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** Polls the run until it ends; its status, then its metrics. */
async function runToEnd(id: string, key = runner) {
  let status = { status: "queued" } as { status: string; error: string | null; cost: { rollouts: number } };
  for (let i = 0; i < 3_000 && !["done", "failed", "stopped", "cancelled"].includes(status.status); i++) {
    await new Promise((r) => setTimeout(r, 200));
    status = await (await call(key, "GET", `/v1/experiments/${id}`)).json();
  }
  const metrics = await (await call(key, "GET", `/v1/experiments/${id}/metrics`)).json();
  return { status, metrics };
}

/** A done run's report (the paired comparison) and every plot it lists, read over the API as its key. */
async function expectReportAndPlots(id: string) {
  await expect
    .poll(async () => (await call(runner, "GET", `/v1/experiments/${id}/report`)).status, { timeout: 10_000 })
    .toBe(200);
  const report = await (await call(runner, "GET", `/v1/experiments/${id}/report`)).text();
  expect(report).toMatch(/^# Harness-S .*experiment/);
  const { plots } = (await (await call(runner, "GET", `/v1/experiments/${id}/plots`)).json()) as {
    plots: { file: string }[];
  };
  expect(plots.length).toBeGreaterThan(0);
  for (const { file } of plots) {
    const png = await call(runner, "GET", `/v1/experiments/${id}/plots/${file}`);
    expect([png.status, png.headers.get("content-type")]).toEqual([200, "image/png"]);
    expect(
      Buffer.from(await png.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");
  }
}

/** The experiment records a key has in the table (the API lists none: read it directly). */
async function recordsOf(keyId: string): Promise<unknown[]> {
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: stack.dynamoEndpoint, region: "us-east-1", credentials: localCredentials }),
  );
  try {
    const scanned = await doc.send(new ScanCommand({ TableName: stack.tables.Experiments }));
    return (scanned.Items ?? []).filter((i) => i.keyId === keyId);
  } finally {
    doc.destroy();
  }
}

/** The caller's tasks as posted: env-serve's tasks by id, each in a split. */
const callerTasks = (splits: readonly ("train" | "dev" | "held-out")[]) =>
  splits.map((split, i) => ({ ...envServe.tasks[i]!, split }));

describe("an experiment's environment through the local stack (issue 57, item 1)", () => {
  it("refuses an environment not offered, a URL in a refused range and a task list without a held-out split: 400s with their codes, nothing recorded or metered", async () => {
    const before = await (await call(other, "GET", "/v1/usage")).json();
    const notOffered = await call(other, "POST", "/v1/experiments", { ...tiny, env: "swe-gym" });
    const refusedUrl = await call(other, "POST", "/v1/experiments", {
      ...tiny,
      env: { kind: "openenv", url: "http://10.0.0.1:8000", tasks: callerTasks(["train", "dev", "held-out"]) },
    });
    const noHeldOut = await call(other, "POST", "/v1/experiments", {
      ...tiny,
      env: { kind: "openenv", url: envServe.url, tasks: callerTasks(["train", "dev", "dev"]) },
    });
    const notServed = await call(other, "POST", "/v1/experiments", { ...tiny, env: "dbbench", model: "llama-70b" });
    const answers = await Promise.all(
      [notOffered, refusedUrl, noHeldOut, notServed].map(async (r) => ({
        status: r.status,
        error: (await r.json()).error,
      })),
    );
    expect(answers.map((a) => [a.status, a.error.code])).toEqual([
      [400, "VALIDATION_FAILED"],
      [400, "URL_NOT_ALLOWED"],
      [400, "VALIDATION_FAILED"],
      [400, "VALIDATION_FAILED"],
    ]);
    expect(JSON.stringify(answers[0]!.error)).toMatch(
      /runs experiments on embedded, dbbench, appworld, a caller's openenv server, not swe-gym/,
    );
    expect(answers[1]!.error.message).toMatch(/10\.0\.0\.1.*private/);
    expect(JSON.stringify(answers[2]!.error)).toMatch(/no task in the held-out split/);
    expect(JSON.stringify(answers[3]!.error)).toMatch(/serves tiny, not llama-70b/);
    // Nothing recorded, no slot taken, nothing metered but the four requests themselves (each its count and its own
    // compute).
    expect(await recordsOf("k-other")).toEqual([]);
    expect(await stack.stores.meter.slotsHeld("k-other")).toBe(0);
    const after = await (await call(other, "GET", "/v1/usage")).json();
    expect(after.usage.requests - before.usage.requests).toBe(4);
    for (const field of ["rollouts", "ballots", "policyTokens", "environmentMs", "sqsRequests", "gpuSeconds"])
      expect([field, after.usage[field]]).toEqual([field, before.usage[field]]);
    expect(setups.openRuns()).toEqual([]);
  }, 60_000);

  it("runs DBBench (SQLite) to done with per-arm results at the worker's model; the database is closed when the run ends", async () => {
    const started = await call(runner, "POST", "/v1/experiments", { ...tiny, env: "dbbench" });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    const { status, metrics } = await runToEnd(id);
    expect(status.error).toBeNull();
    expect(status).toMatchObject({ status: "done", request: { env: "dbbench" } });
    expect(metrics.results.map((r: { arm: string }) => r.arm).sort()).toEqual(["grpo", "harness-s"]);
    expect(metrics.summary.arms.map((a: { name: string }) => a.name)).toEqual(["grpo", "harness-s"]);
    // harness-s rescued the group the tiny model failed with DBBench's siblings.
    expect(metrics.summary.arms[1].perSeed[0].rescue).toMatchObject({ triggered: 1, groups: 1 });
    expect(metrics.summary.arms[1].perSeed[0].rolloutBreakdown.rescue).toBeGreaterThan(0);
    dbbenchSummary = metrics.summary;
    await expectReportAndPlots(id);
    // The run's pool is DBBench's, stored with the run.
    expect((await stack.stores.pools.get(`${id}/pool/1`))?.siblings.map((s) => s.id)).toContain("dbbench-answer-gate");
    await expect.poll(() => setups.openRuns(), { timeout: 5_000 }).toEqual([]);
  }, 600_000);

  it("runs on the caller's own OpenEnv server (tasks posted as data) with a pool the key evolved, to done with per-arm results; another key's pool is a 404", async () => {
    // The key's pool, evolved on its dev tasks at its endpoint (the same worker, a policy of its own) with a margin the
    // tiny model can meet.
    const endpoint = await trainerEndpoint(worker.url, WORKER_TOKEN);
    expect((await call(runner, "POST", "/v1/policy-endpoints", endpoint)).status).toBe(201);
    const tasks = callerTasks(["train", "train", "dev", "dev", "held-out"]);
    const devTasks = tasks.filter((t) => t.split === "dev").map(({ split: _split, ...t }) => t);
    const evolve = {
      endpoint: "mine",
      environment: { kind: "openenv", url: envServe.url },
      devTasks,
      maxTokens: 24,
      maxTurns: 3,
      evolution: { directions: ["budget"], rounds: 1, candidatesPerRound: 1, trials: 1, poolSize: 1, repairMargin: 0 },
    };
    const job = await (await call(runner, "POST", "/v1/pools", { evolve })).json();
    let evolution = job;
    for (let i = 0; i < 600 && !["done", "failed"].includes(evolution.status); i++) {
      await new Promise((r) => setTimeout(r, 200));
      evolution = await (await call(runner, "GET", `/v1/pools/evolutions/${job.id}`)).json();
    }
    expect(evolution).toMatchObject({ status: "done", pool: { id: job.id } });
    const env = { kind: "openenv", url: counted.url, tasks, poolId: job.id };
    const sessionsBefore = counted.sessions;
    // Another key may not name it.
    const notItsPool = await call(other, "POST", "/v1/experiments", { ...tiny, env });
    expect([notItsPool.status, (await notItsPool.json()).error.code]).toEqual([404, "NOT_FOUND"]);
    // Act
    const started = await call(runner, "POST", "/v1/experiments", { ...tiny, model: "tiny", env });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    const { status, metrics } = await runToEnd(id);
    // Assess
    expect(status.error).toBeNull();
    expect(status.status).toBe("done");
    expect(metrics.results.map((r: { arm: string }) => r.arm).sort()).toEqual(["grpo", "harness-s"]);
    expect(metrics.summary.arms.map((a: { name: string }) => a.name)).toEqual(["grpo", "harness-s"]);
    // Every rollout was an episode on the caller's server (one session each).
    expect(status.cost.rollouts).toBeGreaterThan(0);
    expect(counted.sessions - sessionsBefore).toBe(status.cost.rollouts);
    await expectReportAndPlots(id);
    const pool = await stack.stores.pools.get(`${id}/pool/1`);
    expect(pool).toMatchObject({ base: { id: "h0" }, owner: "k-runner" });
    expect(pool?.siblings.map((s) => s.id)).toEqual(
      evolution.pool ? (await stack.stores.pools.get(job.id))!.siblings.map((s) => s.id) : [],
    );
    expect(await recordsOf("k-other")).toEqual([]);
    await expect.poll(() => setups.openRuns(), { timeout: 5_000 }).toEqual([]);
  }, 600_000);

  it("without a pool, evolves one first on the dev split in the caller's environment (its rollouts the run's, within its cap); one that keeps no sibling fails the run, and nothing stays open", async () => {
    const sessionsBefore = counted.sessions;
    const env = { kind: "openenv", url: counted.url, tasks: callerTasks(["train", "dev", "dev", "held-out"]) };
    // A cap of 8 rollouts: H0's measurement (2 dev tasks × 2 trials) and one candidate's.
    const started = await call(runner, "POST", "/v1/experiments", { ...tiny, env, budget: { rollouts: 8 } });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    const { status } = await runToEnd(id);
    expect(status).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/no sibling repaired a dev task H0 fails/),
    });
    expect(status.cost.rollouts).toBe(8);
    expect(counted.sessions - sessionsBefore).toBe(8);
    expect((await stack.stores.meter.job(id)).rollouts).toBe(8);
    await expect.poll(() => setups.openRuns(), { timeout: 5_000 }).toEqual([]);
  }, 600_000);

  it("runs AppWorld at a fixture server started for the run to done with per-arm results; the server is stopped when the run ends", async () => {
    const started = await call(runner, "POST", "/v1/experiments", { ...tiny, env: "appworld" });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    const { status, metrics } = await runToEnd(id);
    expect(status.error).toBeNull();
    expect(status.status).toBe("done");
    expect(metrics.summary.arms.map((a: { name: string }) => a.name)).toEqual(["grpo", "harness-s"]);
    await expectReportAndPlots(id);
    const server = logged
      .map((l) => l.match(/appworld: 1 local AppWorld-protocol servers at (http:\/\/[\d.:]+)/)?.[1])
      .find(Boolean)!;
    expect(server).toBeDefined();
    await expect.poll(() => setups.openRuns(), { timeout: 5_000 }).toEqual([]);
    await expect(fetch(server, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();
  }, 600_000);

  it("the same DBBench configuration through the CLI (in process, the same worker and model, no profile measurement) gives the service's summary", async () => {
    expect(dbbenchSummary).toBeDefined();
    const out = await mkdtemp(join(tmpdir(), "hs-exp-cli-"));
    const flags = ExperimentFlags.parse({
      env: "dbbench",
      engine: "sqlite",
      policy: "worker",
      policyUrl: worker.url,
      policyToken: WORKER_TOKEN,
      policyModel: "tiny",
      seeds: "1",
      arms: "grpo,harness-s",
      steps: "1",
      train: JSON.stringify({ batchSize: 1, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 }),
      evalTasks: "1",
      evalSamples: "3",
      profileBudget: "0",
      out,
    });
    await experiment.run(flags, []);
    expect(JSON.parse(await readFile(join(out, "summary.json"), "utf8"))).toEqual(dbbenchSummary);
  }, 600_000);
});
