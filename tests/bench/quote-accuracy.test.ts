import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { startExperimentStack, waitForExperiment } from "../../packages/cli/src/runtime/local-aws.ts";
import { addKey, startApi } from "../api-factory.ts";
import { RECORD_QUOTES, quoteRecorder, quoteRows } from "./quote-recording.ts";

// Quotes on this deployment's measured basis (issue 28): a first run measures the usage per rollout, then three runs of
// other mixes (arms that rescue or not, steps, batch, samples) are each quoted before they run and set beside what
// they used: rollouts and the load-free cost of goods (DynamoDB, SQS, GPU, voters: Lambda GB-seconds are wall time)
// within 20%. Through the local stack (DynamoDB Local, fauxqs). A benchmark (`npm run bench`); the integration test
// tests/integration/cost-of-goods.test.ts keeps the first run, the 402s and the metering's completeness, and
// tests/unit/quote-recorded.test.ts the arithmetic on these runs' recorded rows.
const setup = embeddedSetup(defaultEmbeddedSettings);
const small = { curveEvery: 1, curveTasks: 4, auditEvery: 2, reanchorEvery: 1, reanchorBudget: 6 };
const first = {
  seeds: [3],
  arms: ["grpo", "harness-s"],
  train: { steps: 2, batchSize: 4, ...small },
  evalSamples: 3,
  evalTasks: 24,
};
const configs = [
  { seeds: [4], arms: ["grpo"], train: { steps: 3, batchSize: 8, ...small }, evalSamples: 3, evalTasks: 24 },
  { seeds: [5], arms: ["harness-s"], train: { steps: 2, batchSize: 8, ...small }, evalSamples: 4, evalTasks: 24 },
  {
    seeds: [6],
    arms: ["harness-s", "grpo-budget"],
    train: { steps: 2, batchSize: 4, ...small },
    evalSamples: 3,
    evalTasks: 24,
  },
];
const within = (quoted: number, actual: number) => Math.abs(quoted - actual) / actual;
const rates = (r: Record<string, number> = {}) => `${r.dynamoWriteUnits?.toFixed(2)}/${r.sqsRequests?.toFixed(2)}`;
const record = quoteRecorder("embedded-mixes");

let stack: LocalStack;
let api: { url: string; close: () => Promise<void> };
let key: string;

beforeAll(async () => {
  stack = await startExperimentStack(setup, "test", undefined, { dynamoEndpoint: inject("dynamoEndpoint") });
  api = await startApi(stack.deps);
  key = await addKey(stack.deps, "buyer", ["experiments"]);
}, 120_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
});

const call = (path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method: body ? "POST" : "GET",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
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

describe("quotes on the measured basis, against what the runs used (embedded suite, local stack)", () => {
  it("quotes three mixes within 20% of their rollouts and load-free cost of goods, on the basis the first run measured", async () => {
    await run(first);
    for (const config of configs) {
      const rows = RECORD_QUOTES ? await quoteRows(stack.deps.meter, config) : {};
      const q = await (await call("/v1/quotes", { experiment: config })).json();
      const { quote, actual } = await run(config);
      record({ name: JSON.stringify(config.arms), request: config, rows, quote: q, actual });
      expect(q.basis.source).toBe("measured");
      expect(quote.rollouts).toBe(q.rollouts); // the run records the quote it was given
      const errors = {
        rollouts: within(quote.rollouts, actual.usage.rollouts),
        costOfGoods: within(quote.costOfGoods.totalUsd, actual.costOfGoods.totalUsd),
        unitsCost: within(
          quote.costOfGoods.totalUsd - quote.costOfGoods.lambdaUsd,
          actual.costOfGoods.totalUsd - actual.costOfGoods.lambdaUsd,
        ),
        charge: within(quote.chargeUsd, actual.chargeUsd),
      };
      console.log(
        `${JSON.stringify(config.arms)} rescue share ${q.basis.rescueShare.toFixed(2)} steps ${config.train.steps} batch ${config.train.batchSize} evalSamples ${config.evalSamples}, DynamoDB write units and SQS requests per rollout ${rates(q.basis.perRollout)}, per extra rollout ${rates(q.basis.perExtraRollout)}: quoted ${quote.rollouts} rollouts, ${quote.costOfGoods.totalUsd} USD cost of goods, ${quote.chargeUsd} USD charge; actual ${actual.usage.rollouts}, ${actual.costOfGoods.totalUsd}, ${actual.chargeUsd}; errors ${JSON.stringify(errors)}`,
      );
      expect(errors.rollouts).toBeLessThan(0.2);
      expect(errors.unitsCost).toBeLessThan(0.2);
    }
  }, 600_000);
});
