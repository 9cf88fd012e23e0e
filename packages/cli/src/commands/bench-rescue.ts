import { randomUUID } from "node:crypto";
import { startOpenEnvServer } from "@harness-s/adapters";
import { CallerRescue, callerTaskOf, singlePolicyEndpoint } from "@harness-s/core/rescue";
import { NotConfiguredError } from "@harness-s/core";
import { hashSecret } from "@harness-s/core/access";
import type { SeedInstance } from "@harness-s/core/experiment";
import { embeddedCallerTask, type embeddedSetup } from "@harness-s/envs";
import { listen } from "@harness-s/functions/api/local";
import { bodyLimitOf, createApp } from "@harness-s/functions/api/app";
import { startLocalStack } from "@harness-s/functions/local/stack";
import { builtinOpenEnv } from "./env-serve.ts";
import { startScriptedPolicy } from "./scripted-policy.ts";

/** Rollouts in flight at once, as the bench measures them. */
export const RESCUE_CONCURRENCY = [1, 8, 32] as const;

/**
 * Caller-rescue rollouts/s at 1, 8 and 32 in flight, through the service (POST /v1/rescues over
 * HTTP → the dispatch queue on fauxqs → the dispatch pollers → DynamoDB Local → GET until done),
 * next to the same rollouts run in process with the same runner (the same scripted protocol-v2
 * policy, the same OpenEnv server: a tool call, then submit). No model: what it measures is the
 * service around the model.
 */
export async function benchRescue(instance: SeedInstance, setup: ReturnType<typeof embeddedSetup>, seconds: number): Promise<string[]> {
  const task = instance.train.find((t) => t.tags.length > 0)!;
  const callerTask = embeddedCallerTask(setup.env, task);
  const tools = callerTask.tools;
  const probe = tools.find((t) => !t.submit)!.name;
  const policy = await startScriptedPolicy((_, turn) => ({ tool: turn === 0 ? probe : "submit" }));
  const env = await startOpenEnvServer(await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" }));
  const noOwnPolicy = singlePolicyEndpoint(() => Promise.reject(new NotConfiguredError("the bench samples the caller's policy only")));
  const stack = await startLocalStack({ tasks: { get: async () => undefined }, allowLoopbackEndpoints: true, policies: noOwnPolicy });
  const api = await listen(createApp(stack.deps).fetch, 0, "127.0.0.1", { bodyLimit: bodyLimitOf(stack.deps) });
  try {
    await stack.stores.pools.put(instance.evolution.pool);
    const secret = `bench-${randomUUID()}`;
    await stack.deps.keys.put({ id: "bench", hash: hashSecret(secret), scopes: ["rescues"] });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${api.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
      return res.json();
    };
    await call("POST", "/v1/policy-endpoints", { id: "scripted", kind: "protocol-v2", url: policy.url, policy: "scripted" });
    const caller = {
      endpoint: "scripted",
      environment: { kind: "openenv", url: env.url },
      task: { id: task.id, family: task.family, tags: task.tags, instruction: task.instruction, tools },
      maxTokens: 16,
    };
    const base = instance.evolution.pool.base;
    const viaService = async (inFlight: number) => {
      const started = await call("POST", "/v1/rescues", { poolId: instance.evolution.pool.id, harnesses: [base.id], rolloutsPerHarness: inFlight, caller });
      for (;;) {
        const status = await call("GET", `/v1/rescues/${started.id}`);
        if (status.status !== "running") return status.completed as number;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const parsed = CallerRescue.parse(caller);
    const runner = await stack.deps.callers!.runner({ kind: "caller", ...parsed, keyId: "bench", weightVersion: 0 });
    const inProcess = async (inFlight: number) => {
      const rollouts = await Promise.all(Array.from({ length: inFlight }, (_, i) => runner(callerTaskOf(parsed.task), base, i)));
      return rollouts.length;
    };
    const rate = async (round: (n: number) => Promise<number>, inFlight: number) => {
      const t0 = performance.now();
      let done = 0;
      while (performance.now() - t0 < seconds * 1000) done += await round(inFlight);
      return done / ((performance.now() - t0) / 1000);
    };
    // Rates to 3 decimals: the ratio printed beside them then follows from the printed rates to
    // 0.002 even at a few rollouts/s (to 1 decimal, 4.7 / 9.8 read 0.480 against a ratio of 0.485).
    const lines = ["rescue rollouts/s          (caller's protocol-v2 policy, scripted; OpenEnv server; through the service vs in process)"];
    for (const n of RESCUE_CONCURRENCY) {
      const service = await rate(viaService, n);
      const local = await rate(inProcess, n);
      lines.push(
        `  ${String(n).padStart(2)} in flight  ${service.toFixed(3).padStart(10)}   in process ${local.toFixed(3).padStart(10)}   service/in-process ${(service / local).toFixed(3)}`,
      );
    }
    return lines;
  } finally {
    await api.close();
    await stack.stop();
    await env.close();
    await policy.close();
  }
}
