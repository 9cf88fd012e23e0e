import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import fc from "fast-check";
import OpenAI from "openai";
import { GatewayEpisodes, genericObserver } from "@harness-s/core/gateway";
import { runEpisode, type Task } from "@harness-s/core";
import { singlePolicyEndpoint } from "@harness-s/core/dispatch";
import type { SeedInstance } from "@harness-s/core/experiment";
import { OpenAiUpstream } from "@harness-s/adapters/llm";
import { MemoryGatewayEpisodeStore } from "@harness-s/adapters/stores";
import { startScriptedOpenAi } from "../scripted-openai.ts";
import { openApiDocument } from "../../functions/api/openapi.ts";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { startLocalStack, type LocalStack } from "@harness-s/functions/local";
import { addKey, seedPool, startApi } from "../api-factory.ts";

// Property: whatever a caller sends to any route of the OpenAPI document (generated bodies, path
// parameters, query strings; with and without a key), the API answers below 500, in time, and
// with no stack trace or backend exception name in the body. Seeded and bounded.
const RUNS_PER_ROUTE = 150;
const LEAKS = /\bat [\w.<>]+ \(|node_modules|Exception\b|TypeError|ReferenceError|DynamoDB|SQS|fauxqs|ECONN/;

let stack: LocalStack;
let model: Awaited<ReturnType<typeof startScriptedOpenAi>>;
let api: { url: string; close: () => Promise<void> };
let inst: SeedInstance;
let key: string;
const counts = { requests: 0, byStatus: {} as Record<string, number> };

beforeAll(async () => {
  const setup = embeddedSetup(defaultEmbeddedSettings);
  inst = await setup.instance(1);
  const byId = new Map([...inst.train, ...inst.heldout].map((t) => [t.id, t]));
  const policy = setup.createPolicy(1);
  const run = (t: Task, h: Parameters<typeof runEpisode>[1], s: number) =>
    runEpisode(t, h, s, { env: setup.env, policy });
  stack = await startLocalStack({
    dynamoEndpoint: inject("dynamoEndpoint"),
    tasks: { get: async (id) => byId.get(id) },
    policies: singlePolicyEndpoint(run),
    prepareExperiment: () => Promise.reject(new Error("the fuzz stack runs no experiments")),
  });
  await seedPool(stack.deps, inst.evolution.pool, inst.evolution.initialProfiles);
  key = await addKey(stack.deps, "fuzz-admin", ["admin"]);
  // The gateway in front of a model that always answers: its routes are fuzzed like the rest.
  model = await startScriptedOpenAi(() => ({ content: "ok" }));
  const gateway = {
    upstream: new OpenAiUpstream(new OpenAI({ baseURL: model.url, apiKey: "none", maxRetries: 0 })),
    episodes: new GatewayEpisodes(new MemoryGatewayEpisodeStore({ maxEpisodes: 1_000, maxEpisodesPerKey: 1_000 }), {
      idleMs: 60_000,
    }),
    poolId: inst.evolution.pool.id,
    observerFor: genericObserver,
    submitTool: "submit",
    defaultFamily: "app",
  };
  api = await startApi({ ...stack.deps, gateway });
}, 60_000);
afterAll(async () => {
  console.log(`fuzz: ${counts.requests} requests, statuses ${JSON.stringify(counts.byStatus)}`);
  await api?.close();
  await model?.close();
  await stack?.stop();
});

/** A valid body per operation, which the generators then break in one place or replace. */
const examples = (): Record<string, unknown> => ({
  "POST /v1/route": {
    poolId: inst.evolution.pool.id,
    task: { id: "t", family: "app", tags: ["app"] },
    failureTags: ["incomplete-results"],
    k: 2,
  },
  "POST /v1/pools": { ...inst.evolution.pool, id: "fuzz-pool" },
  "POST /v1/rescues": {
    poolId: inst.evolution.pool.id,
    taskId: inst.train[0]!.id,
    failureTags: ["incomplete-results"],
    k: 1,
    rolloutsPerHarness: 1,
  },
  "POST /v1/profiles/evidence": {
    poolId: inst.evolution.pool.id,
    outcomes: [
      {
        id: "o",
        harnessId: inst.evolution.pool.siblings[0]!.id,
        family: "app",
        success: true,
        turns: 2,
        policyVersion: 0,
      },
    ],
  },
  "POST /v1/experiments": { seeds: [1], arms: ["grpo"], train: { steps: 1, batchSize: 2 }, budget: { rollouts: 10 } },
  "POST /v1/gateway/chat/completions": {
    model: "m",
    messages: [
      { role: "system", content: "s" },
      { role: "user", content: "task" },
    ],
    tools: [{ type: "function", function: { name: "submit", parameters: {} } }],
  },
  "POST /v1/gateway/episodes/{id}/reward": { reward: 1 },
});

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom(
    "constructor",
    "__proto__",
    "toString",
    "../../etc",
    "%00",
    "a".repeat(3000),
    "",
    " ",
    "embedded-evolved",
    "dec_x",
  ),
);
const json = fc.jsonValue({ maxDepth: 5 });
const mutate = (example: unknown) =>
  fc
    .tuple(fc.constantFrom(...paths(example)), fc.oneof(json, text, fc.constant(undefined)))
    .map(([path, value]) => setAt(structuredClone(example), path, value));
const body = (example: unknown | undefined) =>
  fc.oneof(
    json.map((v) => JSON.stringify(v)),
    text,
    fc.constant(`${"[".repeat(3000)}${"]".repeat(3000)}`),
    ...(example === undefined
      ? []
      : [
          mutate(example).map((v) => JSON.stringify(v)),
          mutate(example)
            .chain((v) => mutate(v))
            .map((v) => JSON.stringify(v)),
        ]),
  );

function paths(v: unknown, prefix: string[] = []): string[][] {
  if (v === null || typeof v !== "object") return [prefix];
  return [prefix, ...Object.entries(v as Record<string, unknown>).flatMap(([k, c]) => paths(c, [...prefix, k]))];
}
function setAt(root: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  let node = root as Record<string, unknown>;
  for (const p of path.slice(0, -1)) node = node[p] as Record<string, unknown>;
  if (value === undefined) delete node[path.at(-1)!];
  else node[path.at(-1)!] = value;
  return root;
}

const operations = Object.entries(openApiDocument().paths ?? {}).flatMap(([path, ops]) =>
  Object.keys(ops as object).map((method) => ({ path, method: method.toUpperCase() })),
);

describe("API fuzz from the OpenAPI document", () => {
  it("covers every operation of the document", () => {
    expect(operations.length).toBeGreaterThanOrEqual(15);
  });

  it.each(operations)(
    "$method $path: no 5xx, no hang, no leaked internals",
    async ({ path, method }) => {
      const example = examples()[`${method} ${path}`];
      const request = fc.record({
        params: fc.array(text, { minLength: 2, maxLength: 2 }),
        query: fc.dictionary(fc.constantFrom("poolId", "arm", "seed", "x", "__proto__"), text, { maxKeys: 3 }),
        body: body(example),
        auth: fc.constantFrom("admin", "admin", "admin", "none", "bogus"),
      });
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          let i = 0;
          const url = new URL(
            `${api.url}${path.replace(/\{[^}]+\}/g, () => encodeURIComponent(r.params[i++] ?? "x"))}`,
          );
          for (const [k, v] of Object.entries(r.query)) url.searchParams.set(k, v);
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (r.auth !== "none") headers.authorization = `Bearer ${r.auth === "admin" ? key : "hs_bogus"}`;
          const res = await fetch(url, {
            method,
            headers,
            body: method === "GET" ? undefined : r.body,
            signal: AbortSignal.timeout(10_000),
          });
          const answer = await res.text();
          counts.requests++;
          counts.byStatus[res.status] = (counts.byStatus[res.status] ?? 0) + 1;
          return res.status < 500 && !LEAKS.test(answer);
        }),
        { numRuns: RUNS_PER_ROUTE, seed: 11, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: false },
      );
    },
    90_000,
  );
});
