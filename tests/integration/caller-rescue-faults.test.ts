import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { hash32, systemClock } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { TokenPolicyClient } from "@harness-s/adapters/policy";
import { defaultEmbeddedSettings, embeddedSetup, embeddedCallerTask } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { startScriptedPolicy, type TurnDelay } from "../../packages/cli/src/commands/scripted-policy.ts";
import { ensureWorkerVenv, startPolicyWorker } from "../../packages/cli/src/policy-worker.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";
import { startServedStub } from "../served-stub.ts";

// Issue 31, acceptance 5: faults in a caller's rescue. The caller's environment server (a real
// `harness-s env-serve` process) killed mid-rescue fails only the slots it had not served, each
// at once with its code and reason, and leaves another rescue on another server untouched; the caller's policy
// endpoint answering 500 or 503 (a reply lost after the worker sampled, or no sample at all) is
// retried within a bound and each slot still runs exactly once.
const TOKEN = "fault-test-token";
const setup = embeddedSetup(defaultEmbeddedSettings);
let inst: SeedInstance;
let worker: Awaited<ReturnType<typeof startPolicyWorker>>;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let secret: string;
/** The environment server no case kills: every case's rescues that should succeed step there. */
let healthy: { url: string; proc: ChildProcess };
const children: ChildProcess[] = [];

/**
 * How the fault proxy reads a kind's requests: which are samples, what makes a repeat the same request, and which opens
 * an episode.
 */
interface Wire {
  isSample: (path: string) => boolean;
  key: (headers: IncomingHttpHeaders, body: string) => string | undefined;
  opensEpisode: (path: string, body: Record<string, unknown>) => boolean;
}

const SERVED_SAMPLES = new Set(["/v1/chat/completions", "/v1/completions", "/inference/v1/generate", "/generate"]);
/**
 * An episode's first turn: its whole conversation (the system message, as the rescue sends it, and the task's first
 * message), rendered or sent.
 */
const firstConversation = (body: Record<string, unknown>) => {
  const messages = body.messages as { role: string; content: string }[] | undefined;
  return messages?.length === 2 && messages[0]!.role === "system" && messages[0]!.content === "";
};
const WIRES: Record<"protocol-v2" | "served", Wire> = {
  // Protocol v2: a sample's repeat carries its idempotency key; an episode opens with `messages`.
  "protocol-v2": {
    isSample: (path) => path.endsWith("/sample"),
    key: (headers) => headers["idempotency-key"] as string | undefined,
    opensEpisode: (path, body) => path.endsWith("/sample") && body.messages !== undefined,
  },
  // vLLM and SGLang: a repeat is the same body (each turn's seed makes it unique); an episode opens
  // with its first conversation, sent to chat completions or rendered by /tokenize.
  served: {
    isSample: (path) => SERVED_SAMPLES.has(path),
    key: (_headers, body) => body,
    opensEpisode: (path, body) =>
      (path === "/v1/chat/completions" || (path === "/tokenize" && body.add_generation_prompt === true)) &&
      firstConversation(body),
  },
};

/** A proxy in front of the worker that fails the sample requests `plan` names, by their order. */
function faultProxy(target: string, plan: Map<number, "lost-reply" | "refused">, wire: Wire = WIRES["protocol-v2"]) {
  const samples: { key: string | undefined; fault?: string }[] = [];
  const episodes: string[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const isSample = wire.isSample(path);
    const fault = isSample ? plan.get(samples.length) : undefined;
    const parsed = body.length ? (JSON.parse(body.toString()) as Record<string, unknown>) : {};
    if (isSample) samples.push({ key: wire.key(req.headers, body.toString()), ...(fault ? { fault } : {}) });
    if (!fault && wire.opensEpisode(path, parsed)) episodes.push(String(parsed.episode_id ?? episodes.length));
    if (fault === "refused")
      return void res
        .writeHead(503, { "content-type": "application/json" })
        .end('{"error":{"code":"OVERLOADED","message":"try again"}}');
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k)),
    ) as Record<string, string>;
    const upstream = await fetch(`${target}${req.url}`, {
      method: req.method!,
      headers,
      ...(body.length ? { body } : {}),
    });
    const text = await upstream.text();
    if (fault === "lost-reply")
      return void res.writeHead(500, { "content-type": "text/plain" }).end("upstream connection reset");
    res
      .writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" })
      .end(text);
  });
  return { server, samples, episodes };
}

async function envServe(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn("node", ["packages/cli/bin/harness-s.js", "env-serve", "--env", "embedded", "--port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(proc);
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  for (let i = 0; i < 600 && !/on (http:\/\/\S+):/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
  const url = /on (http:\/\/\S+):/.exec(out)?.[1];
  if (!url) throw new Error(`env-serve did not start: ${out}`);
  return { url, proc };
}

beforeAll(async () => {
  inst = await setup.instance(1);
  await ensureWorkerVenv();
  // The chat route renders every request whole, as vLLM does.
  worker = await startPolicyWorker({ model: "tiny", token: TOKEN, tuning: { chatPrompts: "render" } });
  await new TokenPolicyClient(worker.url, { token: TOKEN, clock: systemClock }).create("caller-policy", {
    base_model: "tiny",
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj"] },
    seed: 5,
  });
  [stack, healthy] = await Promise.all([
    // Its dispatch poller keeps a running slot invisible by extending its visibility every half timeout: 5 s leaves a
    // loaded machine 2.5 s of slack before a slot waiting on the policy is delivered twice (at 1 s, once, a second
    // attempt of a slot ran, and a slot's spend is metered once: the tokens it sampled were not).
    startCallerRescueStack(inject("dynamoEndpoint"), inst, { visibilitySeconds: { dispatch: 5 } }),
    envServe(),
  ]);
  secret = await addKey(stack.deps, "k-faults", ["rescues"]);
  api = await startApi(stack.deps);
}, 600_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await api?.close();
  await stack?.stop();
  await worker?.stop();
}, 60_000);

const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() };
};

/** How each case registers the worker, and what its rescues name of the version. */
const KINDS = [
  { name: "protocol v2", registration: { kind: "protocol-v2" }, pin: {}, wire: WIRES["protocol-v2"] },
  {
    name: "vLLM messages in",
    registration: { kind: "vllm", mode: "chat-token-ids" },
    pin: { weightVersion: 0, servedModel: "caller-policy@v0" },
    wire: WIRES.served,
  },
  {
    name: "vLLM tokens in",
    registration: { kind: "vllm", mode: "completions-ids" },
    pin: { weightVersion: 0, servedModel: "caller-policy@v0" },
    wire: WIRES.served,
  },
  {
    name: "SGLang generate",
    registration: { kind: "sglang", mode: "sglang-generate" },
    pin: { weightVersion: 0, servedModel: "caller-policy@v0" },
    wire: WIRES.served,
  },
] as const;

async function register(
  id: string,
  url: string,
  registration: (typeof KINDS)[number]["registration"] = { kind: "protocol-v2" },
) {
  const res = await call("POST", "/v1/policy-endpoints", {
    id,
    url,
    policy: "caller-policy",
    secretHeader: { name: "authorization", value: `Bearer ${TOKEN}` },
    ...registration,
  });
  expect(res.status).toBe(201);
}

function rescueBody(endpoint: string, envUrl: string, rolloutsPerHarness: number, pin: Record<string, unknown> = {}) {
  const task = inst.train.find((t) => t.tags.length > 0)!;
  return {
    poolId: inst.evolution.pool.id,
    failureTags: ["incomplete-results"],
    k: 2,
    rolloutsPerHarness,
    caller: {
      endpoint,
      environment: { kind: "openenv", url: envUrl },
      task: embeddedCallerTask(setup.env, task),
      maxTokens: 16,
      ...pin,
    },
  };
}

async function settle(id: string, pollMs = 100, tries = 1200) {
  let status = (await call("GET", `/v1/rescues/${id}`)).body;
  for (let i = 0; i < tries && status.status === "running"; i++) {
    await new Promise((r) => setTimeout(r, pollMs));
    status = (await call("GET", `/v1/rescues/${id}`)).body;
  }
  return status;
}

describe("faults in a caller's rescue", () => {
  for (const c of KINDS)
    it(`${c.name}: a policy endpoint answering 500 or 503 is retried within a bound: each slot runs once, a lost reply is answered again${c.wire === WIRES.served ? " (sampled afresh: only the answered sample is kept)" : ", never sampled twice"}`, async () => {
      const envUrl = healthy.url;
      const plan = new Map<number, "lost-reply" | "refused">([
        [1, "lost-reply"],
        [2, "refused"],
        [6, "lost-reply"],
        [9, "refused"],
      ]);
      const proxy = faultProxy(worker.url, plan, c.wire);
      await new Promise<void>((r) => proxy.server.listen(0, "127.0.0.1", () => r()));
      try {
        const id = `flaky-${c.registration.kind}-${"mode" in c.registration ? c.registration.mode : "v2"}`;
        await register(id, `http://127.0.0.1:${(proxy.server.address() as { port: number }).port}`, c.registration);
        const started = await call("POST", "/v1/rescues", rescueBody(id, envUrl, 2, c.pin));
        expect(started.status).toBe(202);
        const status = await settle(started.body.id);
        expect(status).toMatchObject({ status: "done", completed: started.body.expected, failed: [] });
        // Every planned fault happened, and each was followed by the same request (same key) again.
        const faulted = proxy.samples.filter((s) => s.fault);
        expect(faulted).toHaveLength(plan.size);
        for (const f of faulted) expect(proxy.samples.filter((s) => s.key === f.key && !s.fault)).toHaveLength(1);
        // Each slot ran once: one episode per rollout was ever opened (a rerun slot opens another).
        expect(new Set(proxy.episodes).size).toBe(started.body.expected);
        expect(proxy.episodes).toHaveLength(started.body.expected);
        expect(proxy.samples.every((s) => s.key !== undefined)).toBe(true);
        // The rows are the turns the worker sampled: each re-scores there as returned.
        const page = (await call("GET", `/v1/rescues/${started.body.id}/trajectories?limit=64`)).body;
        expect(page.trajectories.length).toBeGreaterThanOrEqual(started.body.expected);
        const scorer = new TokenPolicyClient(worker.url, { token: TOKEN, clock: systemClock });
        for (const t of page.trajectories) {
          const [rescored] = await scorer.score("caller-policy", {
            sequences: [{ ids: [...t.prompt_ids, ...t.completion_ids] }],
          });
          const tail = rescored!.slice(t.prompt_ids.length);
          t.loss_mask.forEach((m: number, j: number) => {
            if (m === 1) expect(Math.abs(tail[j]! - t.logprobs[j]!)).toBeLessThan(1e-4);
          });
        }
      } finally {
        proxy.server.close();
      }
    }, 300_000);

  /** What rescue A's turns ask for at most (B's ask for fewer): how the policy tells A's samples from B's. */
  const A_TURN = 97;
  /** A's ask in a sample's body, in each wire's spelling (max_tokens, max_new_tokens, max_completion_tokens). */
  const ASKED_AS_A = new RegExp(`"max_(?:new_|completion_)?tokens":${A_TURN}\\b`);
  /**
   * How the policy paces its turns: every episode thinks 20-160 ms a turn (by its id), and rescue A's episodes, all but
   * the first to ask, wait at their first turn until the server is dead (`release`). So A has a slot that can finish
   * before the kill, and slots with every step still to take after it, however loaded the machine: left to their pace
   * alone, A's episodes were once all past their last step when the kill landed (A `done`, not `failed`).
   */
  function paced() {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started = false;
    const delayMs: TurnDelay = (episode, turn, body) => {
      const think = 20 + (hash32(episode) % 8) * 20;
      const firstOfA = turn === 0 && ASKED_AS_A.test(JSON.stringify(body));
      const held = firstOfA && started;
      started ||= firstOfA;
      return held ? released.then(() => new Promise((r) => setTimeout(r, think))) : think;
    };
    return { delayMs, release: () => release() };
  }
  /**
   * The policy each case samples: v2's scripted policy, or the stand-in vLLM/SGLang server, each calling `tool` every
   * turn.
   */
  const METERED = [
    {
      name: "protocol v2",
      start: async (tool: string, delayMs: TurnDelay) => {
        const scripted = await startScriptedPolicy(() => ({ tool }), delayMs);
        // The scripted policy appends 2 ids and samples 2 a turn.
        return {
          url: scripted.url,
          registration: { kind: "protocol-v2" } as const,
          pin: {},
          sampled: () => 4 * scripted.samples(),
          close: scripted.close,
        };
      },
    },
    ...(
      [
        { kind: "vllm", mode: "completions-ids" },
        { kind: "sglang", mode: "sglang-generate" },
        { kind: "openai-chat", mode: "chat-token-ids" },
      ] as const
    ).map((registration) => ({
      name: `${registration.kind} ${registration.mode}`,
      start: async (tool: string, delayMs: TurnDelay) => {
        // Each turn a tool call.
        const stub = await startServedStub({
          models: ["scripted", "scripted@v0"],
          script: () => `<tool_call>{"name": "${tool}", "arguments": {}}</tool_call>`,
          delayMs,
        });
        const url = registration.kind === "openai-chat" ? `${stub.url}/v1` : stub.url;
        // The stand-in counts what a rescue should meter (each turn's new prompt ids and its completion), from after
        // the registration's probe.
        let probed = 0;
        return {
          url,
          registration,
          // A turn long enough for the stand-in's tool call (one id a character).
          pin: { weightVersion: 0, servedModel: "scripted@v0", maxTokens: 96 },
          sampled: () => stub.metered() - probed,
          close: stub.close,
          probed: () => (probed = stub.metered()),
        };
      },
    })),
  ];

  for (const c of METERED)
    it(`${c.name}: an environment server killed mid-rescue fails only the slots it had not served, each with its reason; a rescue on another server is untouched; every token sampled is metered`, async () => {
      const doomed = await envServe();
      // A policy that calls a tool every turn: each episode steps at its environment server until its turns run out.
      const task = inst.train.find((t) => t.tags.length > 0)!;
      const tool = setup.env.tools(task).find((a) => a !== "submit")!;
      const pacing = paced();
      const policy = await c.start(tool, pacing.delayMs);
      const usageBefore = await stack.deps.meter.get("k-faults");
      try {
        const id = `scripted-${c.name.replace(/\W+/g, "-")}`;
        const res = await call("POST", "/v1/policy-endpoints", {
          id,
          url: policy.url,
          policy: "scripted",
          ...policy.registration,
        });
        expect(res.status).toBe(201);
        if ("probed" in policy) policy.probed();
        const a = await call(
          "POST",
          "/v1/rescues",
          rescueBody(id, doomed.url, 16, { ...policy.pin, maxTokens: A_TURN }),
        );
        const b = await call("POST", "/v1/rescues", rescueBody(id, healthy.url, 4, policy.pin));
        expect([a.status, b.status]).toEqual([202, 202]);
        let before = (await call("GET", `/v1/rescues/${a.body.id}`)).body;
        for (let i = 0; i < 3000 && before.completed === 0; i++) {
          await new Promise((r) => setTimeout(r, 20));
          before = (await call("GET", `/v1/rescues/${a.body.id}`)).body;
        }
        const exited = once(doomed.proc, "exit");
        doomed.proc.kill("SIGKILL");
        await exited;
        pacing.release();
        expect(before.completed).toBeGreaterThan(0);
        expect(before.completed).toBeLessThan(a.body.expected);
        const [endA, endB] = await Promise.all([settle(a.body.id), settle(b.body.id)]);
        // B: every slot done on its own server, each episode stepping there.
        expect(endB).toMatchObject({ status: "done", completed: b.body.expected, failed: [] });
        expect(endB.rollouts.every((r: { steps: number }) => r.steps > 1)).toBe(true);
        // A: what was served is kept; every other slot failed, with the environment's reason.
        expect(endA.status).toBe("failed");
        expect(endA.completed).toBeGreaterThanOrEqual(before.completed);
        expect(endA.completed).toBeLessThan(a.body.expected);
        expect(endA.completed + endA.failed.length).toBe(a.body.expected);
        // Each failed at once, with the environment's code (never left to the queue's redeliveries).
        for (const f of endA.failed) {
          expect(f.code).toBe("ENVIRONMENT_FAILED");
          expect(f.reason).toMatch(/ECONNREFUSED|ECONNRESET|closed the session|environment/i);
        }
        // Every token sampled was metered to the key and held against its rescue, by the rollouts
        // that failed as by the others, and the time in the environments. A slot given up while an
        // attempt of it still ran (its message redelivered past the receive limit) adds that
        // attempt's spend when it ends, after the rescue turned terminal: so the figures are
        // compared once nothing more arrives (a lost spend never does).
        const figures = async () => {
          const [usage, a2, b2] = await Promise.all([
            stack.deps.meter.get("k-faults"),
            call("GET", `/v1/rescues/${a.body.id}`),
            call("GET", `/v1/rescues/${b.body.id}`),
          ]);
          return {
            sampled: policy.sampled(),
            metered: usage.policyTokens - usageBefore.policyTokens,
            held: a2.body.spent.policyTokens + b2.body.spent.policyTokens,
            usage,
          };
        };
        await vi
          .waitUntil(
            async () => {
              const f = await figures();
              return f.metered === f.sampled && f.held === f.sampled;
            },
            { timeout: 30_000, interval: 200 },
          )
          .catch(() => undefined);
        const end = await figures();
        expect(end.sampled).toBeGreaterThan(0);
        expect(end.metered).toBe(end.sampled);
        expect(end.usage.environmentMs).toBeGreaterThan(usageBefore.environmentMs);
        expect(end.held).toBe(end.sampled);
        expect(endA.spent.policyTokens + endB.spent.policyTokens).toBeLessThanOrEqual(end.sampled);
      } finally {
        pacing.release();
        await policy.close();
      }
    }, 300_000);
});
