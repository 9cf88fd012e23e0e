import { beforeAll, describe, expect, it } from "vitest";
import type { Clock } from "@harness-s/core";
import { CallerRollout, type PolicyEndpointRecord } from "@harness-s/core/callers";
import type { SeedInstance } from "@harness-s/core/experiment";
import { boundedFetch } from "@harness-s/adapters/llm";
import { OUTBOUND_LIMITS } from "@harness-s/adapters/net";
import { CallerPolicyRunners } from "@harness-s/adapters/policy";
import { MemoryPolicyEndpointStore } from "@harness-s/adapters/stores";
import { defaultEmbeddedSettings, embeddedCallerTask, embeddedSetup } from "@harness-s/envs";
import { goodSample, hostilePolicyFetch, type HostileSample } from "../hostile-policy.ts";

// Issue 52, items 5–8, as a table against the client (issue 68 item 7): a caller's protocol-v2
// endpoint that answers what can never succeed makes its episode fail with the code its slot
// fails with, and the error never carries the secret the endpoint echoed. The endpoint answers in
// process (a stubbed transport, under the same size and time bounds as the outbound guard's); one
// case of each class still runs end to end through the local stack, where the slot fails at once
// with the code and the long poll sees it (tests/integration/hostile-policy-replies.test.ts).
const SECRET = "Bearer hostile-secret-7f3a9c1e5b";
/** The vocabulary the hostile endpoint states: an id at or past it is no token of its. */
const VOCAB = 50_000;
const KEY = "k-hostile";

const staleUnlessZero = (body: Record<string, unknown>): Exclude<HostileSample, { hang: true }> =>
  (body.version as { exact?: number } | undefined)?.exact === 0
    ? { json: goodSample() }
    : { status: 409, json: { error: { code: "STALE_POLICY_VERSION", message: "policy hostile is at version 0" } } };

/** Each hostile policy: its sample answer, and the code its episode (and its slot) fails with. */
const POLICY_CASES: Record<
  string,
  {
    reply: (body: Record<string, unknown>) => Exclude<HostileSample, { hang: true }>;
    code: string;
    weightVersion?: number;
  }
> = {
  "ids-2^53": { reply: () => ({ json: goodSample({ promptIds: [2 ** 53] }) }), code: "POLICY_REPLY_INVALID" },
  "nan-logprobs": {
    reply: () => ({ raw: JSON.stringify(goodSample()).replace("[-0.5,-0.5]", "[NaN,-0.5]"), status: 200 }),
    code: "POLICY_REPLY_INVALID",
  },
  "lengths-differ": {
    reply: () => ({ json: goodSample({ ids: [3, 4], logprobs: [-0.5] }) }),
    code: "POLICY_REPLY_INVALID",
  },
  "invalid-json": { reply: () => ({ raw: "{oops", status: 200 }), code: "POLICY_REPLY_INVALID" },
  "endless-body": { reply: () => ({ endless: true }), code: "POLICY_ENDPOINT_FAILED" },
  "500-forever": { reply: () => ({ raw: "upstream connection reset", status: 500 }), code: "POLICY_ENDPOINT_FAILED" },
  "weight-version-not-held": { reply: staleUnlessZero, code: "STALE_POLICY_VERSION", weightVersion: 7 },
  "negative-ids": { reply: () => ({ json: goodSample({ ids: [-1, -5, 7] }) }), code: "POLICY_REPLY_INVALID" },
  "positive-logprobs": {
    reply: () => ({ json: goodSample({ logprobs: [5.0, 1e308] }) }),
    code: "POLICY_REPLY_INVALID",
  },
  "million-prompt-ids": {
    reply: () => ({ json: goodSample({ promptIds: Array(1_000_000).fill(5) }) }),
    code: "POLICY_REPLY_INVALID",
  },
  "version-plus-one": { reply: () => ({ json: goodSample({ version: 1 }) }), code: "STALE_POLICY_VERSION" },
  "echoes-secret-400": { reply: () => ({ echoHeaders: 400 }), code: "POLICY_ENDPOINT_FAILED" },
  // Variants of our own, one per class.
  "infinite-logprob": {
    reply: () => ({ raw: JSON.stringify(goodSample()).replace("[-0.5,-0.5]", "[-1e999,-0.5]"), status: 200 }),
    code: "POLICY_REPLY_INVALID",
  },
  "fractional-ids": { reply: () => ({ json: goodSample({ ids: [3.5, 4] }) }), code: "POLICY_REPLY_INVALID" },
  "ids-past-vocabulary": { reply: () => ({ json: goodSample({ ids: [3, VOCAB] }) }), code: "POLICY_REPLY_INVALID" },
  "410-gone": {
    reply: () => ({ json: { error: { code: "GONE", message: "no such policy" } }, status: 410 }),
    code: "POLICY_ENDPOINT_FAILED",
  },
  "version-minus-one": {
    reply: () => ({ json: goodSample({ version: 0 }) }),
    code: "STALE_POLICY_VERSION",
    weightVersion: 1,
  },
  "echoes-secret-500": { reply: () => ({ echoHeaders: 500 }), code: "POLICY_ENDPOINT_FAILED" },
};

/** A clock whose waits end at once: the transport's retries of a 5xx back off without this table waiting. */
const instant: Clock = { now: () => Date.now(), sleep: async () => undefined };
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let runners: CallerPolicyRunners;

const endpointId = (name: string) => `ep-${name.replace(/[^A-Za-z0-9-]/g, "-")}`;
const record = (name: string, version: number): PolicyEndpointRecord => ({
  id: endpointId(name),
  kind: "protocol-v2",
  url: "http://policy.example",
  policy: name,
  secretHeader: { name: "authorization", value: SECRET },
  keyId: KEY,
  createdAt: 0,
  probe: { weightVersion: version, checkedAt: 0 },
});

beforeAll(async () => {
  inst = await setup.instance(1);
  const endpoints = new MemoryPolicyEndpointStore();
  for (const name of [...Object.keys(POLICY_CASES), "well-behaved"]) await endpoints.put(record(name, 0), 1_000);
  const hostile = hostilePolicyFetch(
    (name, body) => POLICY_CASES[name]?.reply(body) ?? { json: goodSample() },
    0,
    VOCAB,
  );
  runners = new CallerPolicyRunners({
    endpoints,
    outbound: { allowLoopback: false },
    clock: instant,
    builtin: { embedded: setup.env },
    transport: { fetch: boundedFetch(OUTBOUND_LIMITS, hostile), clock: instant, timeoutMs: OUTBOUND_LIMITS.deadlineMs },
  });
});

/** One episode of the rescue's task at `name`'s endpoint: what it ended as. */
async function episodeAt(name: string, weightVersion = 0) {
  const task = inst.train[0]!;
  const caller = CallerRollout.parse({
    keyId: KEY,
    endpoint: endpointId(name),
    environment: { kind: "builtin", id: "embedded" },
    task: embeddedCallerTask(setup.env, task),
    maxTokens: 16,
    weightVersion,
  });
  const run = await runners.runner({ ...caller, kind: "caller" });
  return run(task, inst.evolution.pool.base, 1).then(
    (rollout) => ({ rollout, error: undefined }),
    (error: { code?: string; message?: string }) => ({ rollout: undefined, error }),
  );
}

describe("a caller's protocol-v2 endpoint that answers what can never succeed, against the client", () => {
  it("a well-behaved endpoint's episode ends (the table's baseline)", async () => {
    const out = await episodeAt("well-behaved");
    expect(out.error).toBeUndefined();
    expect(out.rollout!.steps.length).toBeGreaterThan(0);
  });

  for (const [name, c] of Object.entries(POLICY_CASES))
    it(`${name}: the episode fails with ${c.code}, and never with the secret the endpoint saw`, async () => {
      const out = await episodeAt(name, c.weightVersion);
      expect(out.error, JSON.stringify(out.rollout?.steps.length)).toMatchObject({ code: c.code });
      expect(JSON.stringify({ message: out.error?.message, cause: String((out.error as Error).cause) })).not.toContain(
        "hostile-secret",
      );
    });
});
