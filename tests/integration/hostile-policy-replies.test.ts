import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { SeedInstance } from "@harness-s/core/experiment";
import { startOpenEnvServer } from "@harness-s/adapters/openenv";
import { defaultEmbeddedSettings, embeddedSetup, embeddedCallerTask } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";
import { goodSample, startHostilePolicy, type HostileSample } from "../hostile-policy.ts";
import { startHostileOpenEnv, type HostileEnvReply } from "../hostile-openenv.ts";

// Issue 52, items 5–8: a caller's policy endpoint or environment that answers what can never
// succeed, end to end (the policy's replies, case by case, are a table against the client:
// tests/unit/hostile-policy-replies.test.ts; here one invalid reply and one that echoes the secret). Each case is one rescue of one slot against the local stack (DynamoDB Local, fauxqs,
// the dispatch worker) at the deployed visibility timeout (6 minutes): a slot that waited for
// SQS to deliver its message again would not end within this file's time. A permanent failure
// fails its slot at once with its code, the long poll wakes within 10 s of the reply that decided
// it, and the trajectories of the failed rescue answer 200 with no rows (never a 500).
const SECRET = "Bearer hostile-secret-7f3a9c1e5b";
const ENV_SECRET = "env-secret-2b8d4f6a0c";
/** The vocabulary the hostile endpoint states: an id at or past it is no token of its. */
const VOCAB = 50_000;
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let policy: Awaited<ReturnType<typeof startHostilePolicy>>;
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let hostileEnv: Awaited<ReturnType<typeof startHostileOpenEnv>>;
let key: string;
const logs: string[] = [];

/**
 * The end-to-end case of the policy table (tests/unit/hostile-policy-replies.test.ts holds every case against the
 * client): the reply, and the code its slot fails with at once.
 */
const POLICY_CASES: Record<string, { reply: () => HostileSample; code: string; weightVersion?: number }> = {
  "nan-logprobs": {
    reply: () => ({ raw: JSON.stringify(goodSample()).replace("[-0.5,-0.5]", "[NaN,-0.5]"), status: 200 }),
    code: "POLICY_REPLY_INVALID",
  },
  "echoes-secret-500": { reply: () => ({ echoHeaders: 500 }), code: "POLICY_ENDPOINT_FAILED" },
};

/** Each hostile environment (the policy is well-behaved), and the code its slot must fail with. */
const ENV_CASES: Record<string, { reply: HostileEnvReply; code: string }> = {
  "observation-over-4MiB": { reply: { resetText: "x".repeat(5 << 20) }, code: "ENVIRONMENT_FAILED" },
  "reward-1e999": {
    reply: { submitRaw: '{"type":"observation","data":{"observation":{"text":"graded"},"reward":1e999,"done":true}}' },
    code: "ENVIRONMENT_FAILED",
  },
  // Variants: a reward that is not a number, an error that echoes the session's secret header.
  "reward-string": {
    reply: { submitRaw: '{"type":"observation","data":{"observation":{"text":"graded"},"reward":"1","done":true}}' },
    code: "ENVIRONMENT_FAILED",
  },
  "error-echoes-secret": { reply: { resetEchoHeaders: true }, code: "ENVIRONMENT_FAILED" },
};

beforeAll(async () => {
  inst = await setup.instance(1);
  [policy, envServer, hostileEnv] = await Promise.all([
    startHostilePolicy((name) => POLICY_CASES[name]?.reply() ?? { json: goodSample() }, 0, VOCAB),
    builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }).then((o) =>
      startOpenEnvServer(o),
    ),
    startHostileOpenEnv((name) => ENV_CASES[name]?.reply ?? {}),
  ]);
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst, { log: (line) => logs.push(line) });
  key = await addKey(stack.deps, "k-hostile", ["rescues"]);
  api = await startApi(stack.deps);
  for (const name of [...Object.keys(POLICY_CASES), "well-behaved"]) {
    const res = await call("POST", "/v1/policy-endpoints", {
      id: endpointId(name),
      kind: "protocol-v2",
      url: policy.url,
      policy: name,
      secretHeader: { name: "authorization", value: SECRET },
    });
    expect(res.status, await res.clone().text()).toBe(201);
  }
}, 180_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await Promise.all([policy?.close(), envServer?.close(), hostileEnv?.close()]);
}, 60_000);

const endpointId = (name: string) => `ep-${name.replace(/[^A-Za-z0-9-]/g, "-")}`;
const call = (method: string, path: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** One slot's rescue on `endpoint` in `environment`; what it ended as, and when the long poll saw it. */
async function rescueOnce(endpoint: string, environment: unknown, weightVersion?: number) {
  const task = inst.train[0]!;
  const res = await call("POST", "/v1/rescues", {
    poolId: inst.evolution.pool.id,
    harnesses: [inst.evolution.pool.base.id],
    rolloutsPerHarness: 1,
    caller: {
      endpoint,
      environment,
      task: embeddedCallerTask(setup.env, task),
      maxTokens: 16,
      ...(weightVersion === undefined ? {} : { weightVersion }),
    },
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const { id } = await res.json();
  let status = await (await call("GET", `/v1/rescues/${id}`)).json();
  for (let i = 0; i < 3 && status.status === "running"; i++)
    status = await (await call("GET", `/v1/rescues/${id}?wait=20&seen=0`)).json();
  const seenAt = Date.now();
  const trajectories = await call("GET", `/v1/rescues/${id}/trajectories`);
  return { id, status, seenAt, trajectories: { status: trajectories.status, body: await trajectories.json() } };
}

const table: string[] = [];
const row = (name: string, out: Awaited<ReturnType<typeof rescueOnce>>, afterMs: number) =>
  table.push(
    `| ${name} | ${out.status.status} ${out.status.failed[0]?.code ?? ""} ${process.env.SHOW_REASONS ? out.status.failed[0]?.reason : ""} | ${(afterMs / 1000).toFixed(1)} s | ${out.trajectories.status} (${out.trajectories.body.trajectories?.length ?? out.trajectories.body.error?.code} rows) |`,
  );

describe("a caller's policy endpoint that answers what can never succeed", () => {
  for (const [name, c] of Object.entries(POLICY_CASES))
    it(`${name}: the slot fails at once with ${c.code}, and its trajectories answer 200`, async () => {
      const out = await rescueOnce(endpointId(name), { kind: "openenv", url: envServer.url }, c.weightVersion);
      const afterMs = out.seenAt - (policy.repliedAt.get(name) ?? out.seenAt);
      row(name, out, afterMs);
      expect(out.status).toMatchObject({ status: "failed", completed: 0, failed: [{ index: 0, code: c.code }] });
      expect(afterMs).toBeLessThan(10_000);
      expect(out.trajectories).toMatchObject({ status: 200, body: { trajectories: [] } });
      // Never the secret the endpoint echoed: not in the status, not in serve's log.
      expect(JSON.stringify(out.status)).not.toContain("hostile-secret");
    }, 90_000);

  it("logged no secret a hostile endpoint echoed", () => {
    expect(logs.join("\n")).not.toContain("hostile-secret");
    expect(logs.join("\n")).not.toContain(ENV_SECRET);
  });
});

describe("a caller's environment that answers what can never succeed", () => {
  for (const [name, c] of Object.entries(ENV_CASES))
    it(`${name}: the slot fails at once with ${c.code}`, async () => {
      const environment = {
        kind: "openenv",
        url: `${hostileEnv.url}/${name}`,
        secretHeader: { name: "x-env-key", value: ENV_SECRET },
      };
      const out = await rescueOnce(endpointId("well-behaved"), environment);
      const afterMs = out.seenAt - (hostileEnv.repliedAt.get(name) ?? out.seenAt);
      row(name, out, afterMs);
      expect(out.status).toMatchObject({ status: "failed", completed: 0, failed: [{ index: 0, code: c.code }] });
      expect(afterMs).toBeLessThan(10_000);
      expect(out.trajectories).toMatchObject({ status: 200, body: { trajectories: [] } });
      expect(JSON.stringify(out.status)).not.toContain(ENV_SECRET);
    }, 90_000);

  it("prints the table of what each hostile reply got", () => {
    console.log(
      ["| hostile reply | rescue | seen after the deciding reply | trajectories |", "|---|---|---|---|", ...table].join(
        "\n",
      ),
    );
  });
});
