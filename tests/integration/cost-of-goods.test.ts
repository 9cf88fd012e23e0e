import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { startFauxqs, type FauxqsServer } from "fauxqs";
import { DynamoUsageMeter } from "@harness-s/adapters/stores";
import { localCredentials } from "@harness-s/adapters/local";
import { QUOTE_BASIS_KEY } from "@harness-s/core/quoting";
import { dayOf, isQuoteBasisKey, type Usage } from "@harness-s/core/billing";
import { newApiKey } from "@harness-s/core/access";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startExperimentStack, waitForExperiment } from "../../packages/cli/src/runtime/local-aws.ts";
import type { LocalStack } from "@harness-s/functions/local";
import { addKey, startApi } from "../api-factory.ts";
import { countingProxy, dynamoCapacity, sqsBilled } from "../counting-proxy.ts";

const setup = embeddedSetup(defaultEmbeddedSettings);
const small = { curveEvery: 1, curveTasks: 4, auditEvery: 2, reanchorEvery: 1, reanchorBudget: 6 };
/** The run that gives this deployment its measured basis. */
const first = {
  seeds: [3],
  arms: ["grpo", "harness-s"],
  train: { steps: 2, batchSize: 4, ...small },
  evalSamples: 3,
  evalTasks: 24,
};

describe("cost of goods through the local stack (DynamoDB Local and fauxqs behind recording proxies)", () => {
  let fauxqs: FauxqsServer;
  let sqsProxy: Awaited<ReturnType<typeof countingProxy>>;
  let dynamoProxy: Awaited<ReturnType<typeof countingProxy>>;
  let stack: LocalStack;
  let api: { url: string; close: () => Promise<void> };
  let key: string;

  beforeAll(async () => {
    fauxqs = await startFauxqs({ port: 0, host: "127.0.0.1", logger: false });
    sqsProxy = await countingProxy(`http://127.0.0.1:${fauxqs.port}`);
    dynamoProxy = await countingProxy(inject("dynamoEndpoint"));
    stack = await startExperimentStack(setup, "test", (line) => line.includes("metering") && console.log(line), {
      dynamoEndpoint: dynamoProxy.url,
      sqsEndpoint: sqsProxy.url,
    });
    api = await startApi(stack.deps);
    key = await addKey(stack.deps, "buyer", ["experiments", "rescues"]);
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await stack?.stop();
    await sqsProxy?.stop();
    await dynamoProxy?.stop();
    await fauxqs?.stop();
  });

  const call = (path: string, body?: unknown, secret = key) =>
    fetch(`${api.url}${path}`, {
      method: body ? "POST" : "GET",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
  const run = async (request: unknown) => {
    const started = await call("/v1/experiments", request);
    expect(started.status).toBe(202);
    const { id, quote } = await started.json();
    await waitForExperiment(stack, id);
    await new Promise((r) => setTimeout(r, 1500)); // the dispatch workers' last invocations bill when they end
    const status = await (await call(`/v1/experiments/${id}`)).json();
    expect(status.status).toBe("done");
    return { quote, actual: status.actual };
  };

  it("a run measures this deployment's basis and records the quote it was given; a quote above a key's budget is a 402 and starts nothing", async () => {
    // Quotes against what three more runs used are a benchmark: tests/bench/quote-accuracy.test.ts.
    const before = await (await call("/v1/quotes", { experiment: first })).json();
    expect(before.basis).toMatchObject({ source: "defaults", jobs: 0 });
    const measured = await run(first);
    expect(measured.quote.rollouts).toBe(before.rollouts); // the run records the quote it was given
    const after = await (await call("/v1/quotes", { experiment: first })).json();
    expect(after.basis).toMatchObject({ source: "measured", jobs: 1 });
    expect((await stack.stores.meter.get(QUOTE_BASIS_KEY)).requests).toBe(1);

    // A key whose budget is below the quote: 402, nothing recorded, queued or billed but the request
    const { secret, record } = newApiKey("thrifty", ["experiments"]);
    await stack.deps.keys.put({ ...record, budgetUsd: 0.001 });
    const refused = await call("/v1/experiments", first, secret);
    expect(refused.status).toBe(402);
    expect((await refused.json()).error.message).toMatch(/above the .* USD left of this key's budget of 0.001 USD/);
    expect(await stack.stores.meter.slotsHeld("thrifty")).toBe(0);
    expect((await stack.stores.meter.get("thrifty")).rollouts).toBe(0);
    // …and a run's own USD budget below its quote, for any key
    const own = await call("/v1/experiments", { ...first, budget: { rollouts: 100_000, usd: 0.0001 } });
    expect(own.status).toBe(402);
  }, 600_000);

  it("meters every SQS request the queue server received and every capacity unit DynamoDB reported, to a key, a job or the deployment", async () => {
    // Act
    const today = dayOf(Date.now());
    await stack.stop(); // the pollers stop and bill what is left; the meters' tables stay readable
    const client = new DynamoDBClient({
      endpoint: inject("dynamoEndpoint"),
      region: "us-east-1",
      credentials: localCredentials,
    });
    // The quote basis sums finished jobs' usage again: it is not a payer
    const rows = (
      await new DynamoUsageMeter(DynamoDBDocumentClient.from(client), stack.tables).byDay({ from: today, to: today })
    ).filter((r) => !isQuoteBasisKey(r.keyId));
    client.destroy();
    // Assess
    const sum = (f: keyof Usage) => rows.reduce((n, r) => n + r.usage[f], 0);
    const observed = dynamoCapacity(dynamoProxy.exchanges, [stack.tables.Usage, stack.tables.UsageDays]);
    const sqsSeen = sqsBilled(sqsProxy.exchanges);
    console.log(
      `SQS: ${sqsProxy.exchanges.length} requests at the queue server, ${sqsSeen} as billed (64 KB chunks), ${sum("sqsRequests")} metered; DynamoDB: ${observed.read} read and ${observed.write} write units reported, ${sum("dynamoReadUnits")} and ${sum("dynamoWriteUnits")} metered; by key ${JSON.stringify(rows.map((r) => [r.keyId, r.usage.sqsRequests, r.usage.dynamoReadUnits, r.usage.dynamoWriteUnits]))}`,
    );
    expect(sum("sqsRequests")).toBe(sqsSeen);
    expect(sum("dynamoReadUnits")).toBeCloseTo(observed.read, 6);
    expect(sum("dynamoWriteUnits")).toBeCloseTo(observed.write, 6);
    expect(observed.write).toBeGreaterThan(0);
    const buyer = rows.find((r) => r.keyId === "buyer")!.usage;
    expect(buyer.sqsRequests).toBeGreaterThan(sqsSeen / 4); // the experiments' rollouts and ballots, not only overhead
    expect(buyer.lambdaGbSeconds).toBeGreaterThan(0);
  }, 120_000);
});
