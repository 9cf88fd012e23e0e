import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createPool, parseHarnessSpec, systemClock } from "@harness-s/core";
import { envelope, type Envelope } from "@harness-s/core/messaging";
import { ExperimentPlan, startExperiment } from "@harness-s/core/experiment";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { DynamoExperimentStore, DynamoPolicyEndpointStore, DynamoPoolStore } from "@harness-s/adapters/stores";
import { createTables, tableNames } from "@harness-s/adapters/dynamo";
import { localCredentials } from "@harness-s/adapters/local";
import { AwsConfig } from "../../functions/aws-config.ts";
import { lambdaClients } from "../../functions/lambda-clients.ts";
import { createCoordinatorHandler } from "../../functions/coordinator/handler.ts";
import { deployedCoordinatorDeps } from "../../functions/coordinator/deployed.ts";
import { deployedOffers } from "../../functions/api/lambda-deps.ts";
import { SERVED_MODELS } from "../../infra/settings.ts";
import { ensureWorkerVenv, startPolicyWorker } from "../../packages/cli/src/policy-worker.ts";
import { makeSqsRecord } from "../factories.ts";
import { type EnvServeProcess, startEnvServe } from "../../scripts/serve-process.ts";

// Issue 57: the DEPLOYED coordinator (its composition root's deps, `deployedCoordinatorDeps`,
// given DynamoDB Local's clients as the Lambda is given AWS's) runs a caller's own OpenEnv server:
// `env-serve` in a process of its own on loopback (tests connect to loopback only: the deployed
// guard, which never opens loopback, is given way to loopback here; its refusals and EndpointCidrs
// are tested on the classifier), its tasks posted as data, the policy the
// tiny worker serving the stacks' SERVED_MODELS name (as the GPU endpoint's worker does). A run
// on a built-in family is refused: at POST by the API Lambda's offers, at the coordinator with
// NOT_CONFIGURED, nothing metered. Kept tiny: one seed, two arms, one step of one group of two.
const TOKEN = "deployed-coordinator-token";
const MODEL = SERVED_MODELS[0].name;
const tiny = {
  seeds: [1],
  arms: ["grpo", "harness-s"],
  train: { steps: 1, batchSize: 1, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 },
  evalTasks: 1,
  evalSamples: 3,
};
const address = "127.0.0.1";

let worker: Awaited<ReturnType<typeof startPolicyWorker>>;
let envServe: EnvServeProcess;
/** A proxy in front of env-serve counting the sessions opened through it: the caller's URL as posted. */
let counted: { url: string; sessions: number; server: Server };
let config: AwsConfig;
let clients: ReturnType<typeof lambdaClients>;
let handler: ReturnType<typeof createCoordinatorHandler>;
const queued: Envelope[] = [];

/** Forwards every WebSocket upgrade to `target`, counting them; listens on `host`. */
async function countingProxy(target: string, host: string): Promise<typeof counted> {
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
  await new Promise<void>((r) => server.listen(0, host, r));
  proxy.url = `http://${host}:${(server.address() as { port: number }).port}`;
  return proxy;
}

beforeAll(async () => {
  await ensureWorkerVenv();
  [worker, envServe] = await Promise.all([
    startPolicyWorker({ model: "tiny", token: TOKEN, tuning: { servedModelName: MODEL } }),
    startEnvServe(address),
  ]);
  counted = await countingProxy(envServe.url, address);
  const tables = tableNames(`dc${Date.now().toString(36)}-`);
  const sdk = { endpoint: inject("dynamoEndpoint"), region: "us-east-1", credentials: localCredentials };
  await createTables(new DynamoDBClient(sdk), tables);
  // As the coordinator's linked resources give it: the tables, no queues (a run fits one invocation), the endpoint and
  // its token; the guard opened to loopback (see above).
  config = AwsConfig.parse({
    tables,
    queues: {},
    policyEndpointUrl: worker.url,
    policyEndpointToken: TOKEN,
    memoryGb: 1,
  }) as AwsConfig;
  clients = lambdaClients(config, { dynamo: sdk });
  handler = createCoordinatorHandler(deployedCoordinatorDeps(config, clients, { allowLoopback: true, allowCidrs: [] }));
}, 600_000);
afterAll(async () => {
  counted?.server.close();
  envServe?.proc.kill("SIGTERM");
  await worker?.stop();
}, 60_000);

/**
 * What the API checks a run against before it records it: its callers' policies (the outbound guard, open to loopback
 * here as this file's coordinator is) and the pools.
 */
const admission = () => ({
  callers: new CallerPolicyRunners({
    endpoints: new DynamoPolicyEndpointStore(clients.doc, config.tables),
    outbound: { allowLoopback: true },
    clock: systemClock,
  }),
  pools: new DynamoPoolStore(clients.doc, config.tables),
});

/**
 * `POST /v1/experiments` as the API Lambda takes it (its offers and admission), then the coordinator's delivery of the
 * run.
 */
async function postAndRun(body: unknown, keyId: string) {
  const experiments = new DynamoExperimentStore(clients.doc, config.tables);
  const record = await startExperiment(ExperimentPlan.parse(body), keyId, {
    ...admission(),
    experiments,
    coordinator: { send: async (messages) => void queued.push(...messages) },
    clock: systemClock,
    newId: () => `exp_${keyId}_${Date.now().toString(36)}`,
    offers: deployedOffers(config),
  });
  const message = queued.find((m) => m.type === "experiment.requested" && m.body.experimentId === record.id)!;
  const answer = await handler({ Records: [makeSqsRecord(record.id, message)] });
  return { answer, record: (await experiments.get(record.id))! };
}

/**
 * Bypasses the offers (a run recorded by an API that offered more, or a replayed message): what the coordinator itself
 * does with it.
 */
async function runUnoffered(body: unknown, keyId: string) {
  const id = `exp_${keyId}_${Date.now().toString(36)}`;
  const experiments = new DynamoExperimentStore(clients.doc, config.tables);
  const plan = ExperimentPlan.parse(body);
  await startExperiment(plan, keyId, {
    ...admission(),
    experiments,
    coordinator: { send: async () => undefined },
    clock: systemClock,
    newId: () => id,
    offers: { envs: ["embedded", "dbbench"], callerEnvironments: true, models: [MODEL] },
  });
  const answer = await handler({
    Records: [
      makeSqsRecord(
        id,
        envelope("experiment.requested", `experiment:${id}`, { experimentId: id }, { keyId, jobId: id }),
      ),
    ],
  });
  return { answer, record: (await experiments.get(id))! };
}

describe("the deployed coordinator (issue 57): a caller's own environment at the GPU endpoint's model; the built-in families refused", () => {
  it("runs the caller's OpenEnv server (tasks posted as data, the key's pool) to done with per-arm results, every rollout a session through the deployed guard", async () => {
    // The key's own pool (as POST /v1/pools stores one): H0 and one sibling with more turns.
    const h0 = parseHarnessSpec({
      id: "h0",
      budget: { maxTurns: 3 },
      provenance: { direction: "base", proposer: "caller" },
    });
    const more = parseHarnessSpec({
      id: "h0-budget",
      budget: { maxTurns: 5 },
      provenance: { direction: "budget", proposer: "caller" },
    });
    await new DynamoPoolStore(clients.doc, config.tables).put({
      ...createPool("pool_k-runner", h0, [more]),
      owner: "k-runner",
    });
    const tasks = ["train", "train", "dev", "held-out"].map((split, i) => ({ ...envServe.tasks[i]!, split }));
    const env = { kind: "openenv", url: counted.url, tasks, poolId: "pool_k-runner" };
    // Act
    const { answer, record } = await postAndRun({ ...tiny, env, model: MODEL }, "k-runner");
    // Assess
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(record.error).toBeUndefined();
    expect(record.status).toBe("done");
    expect(record.results.map((r) => r.arm).sort()).toEqual(["grpo", "harness-s"]);
    expect(record.summary?.arms.map((a) => a.name)).toEqual(["grpo", "harness-s"]);
    // Every rollout an episode on the caller's server (one session each), billed to the key.
    expect(record.usage.rollouts).toBeGreaterThan(0);
    expect(counted.sessions).toBe(record.usage.rollouts);
    const used = await clients.meter.job(record.id);
    expect(used.rollouts).toBe(record.usage.rollouts);
    // Its policies sampled at the endpoint's worker: the tokens metered to the run (the tiny model's groups all fail
    // alike: nothing to train on).
    expect(used.sampledTokens).toBeGreaterThan(0);
    console.log(
      `deployed caller-env run: ${record.usage.rollouts} rollouts, ${counted.sessions} sessions, ${used.sampledTokens} tokens sampled, ${used.trainedTokens} trained`,
    );
    // The run's pool is the key's, stored with the run.
    expect(await new DynamoPoolStore(clients.doc, config.tables).get(`${record.id}/pool/1`)).toMatchObject({
      base: { id: "h0" },
      siblings: [{ id: "h0-budget" }],
    });
  }, 600_000);

  it("refuses a built-in family: a 400 at POST (the API Lambda's offers name what runs), NOT_CONFIGURED at the coordinator naming what is missing; nothing metered", async () => {
    await expect(postAndRun({ ...tiny, env: "dbbench" }, "k-other")).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
      message: expect.stringMatching(/runs experiments on embedded, a caller's openenv server, not dbbench/),
    });
    const { answer, record } = await runUnoffered({ ...tiny, env: "dbbench" }, "k-other");
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(record).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/not dbbench: it would need a database for its tasks .* harness-s serve/),
    });
    expect(record.usage.rollouts).toBe(0);
    // No rollout, ballot, policy token or GPU second (only the coordinator's own calls marking it failed, as for any
    // run).
    for (const used of [await clients.meter.job(record.id), await clients.meter.get("k-other")])
      expect(used).toMatchObject({
        rollouts: 0,
        ballots: 0,
        policyTokens: 0,
        sampledTokens: 0,
        trainedTokens: 0,
        gpuSeconds: 0,
      });
    // Without a policy endpoint, the API Lambda offers no caller's environment either.
    expect(deployedOffers({}).callerEnvironments).toBe(false);
    expect(deployedOffers(config)).toMatchObject({ envs: ["embedded"], callerEnvironments: true, models: [MODEL] });
  }, 120_000);

  it("with the deployment's own guard (no loopback, whatever EndpointCidrs holds) the same caller's run never reaches the server", async () => {
    const guarded = createCoordinatorHandler(deployedCoordinatorDeps(config, clients));
    const tasks = ["train", "train", "dev", "held-out"].map((split, i) => ({ ...envServe.tasks[i]!, split }));
    const id = `exp_k-guarded_${Date.now().toString(36)}`;
    const experiments = new DynamoExperimentStore(clients.doc, config.tables);
    const plan = ExperimentPlan.parse({
      ...tiny,
      env: { kind: "openenv", url: counted.url, tasks, poolId: "pool_k-runner" },
      model: MODEL,
    });
    await startExperiment(plan, "k-runner", {
      ...admission(),
      experiments,
      coordinator: { send: async () => undefined },
      clock: systemClock,
      newId: () => id,
      offers: deployedOffers(config),
    });
    const before = counted.sessions;
    await guarded({
      Records: [
        makeSqsRecord(
          id,
          envelope("experiment.requested", `experiment:${id}`, { experimentId: id }, { keyId: "k-runner", jobId: id }),
        ),
      ],
    });
    expect((await experiments.get(id))!).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/URL_NOT_ALLOWED|not allowed|loopback/i),
    });
    expect(counted.sessions).toBe(before);
  }, 120_000);
});
