import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { percentile } from "@harness-s/core/metrics";
import { newApiKey, type Scope } from "@harness-s/core/access";
import { DynamoApiKeyStore } from "@harness-s/adapters/stores";
import { localCredentials } from "@harness-s/adapters/local";
import { tableNames } from "@harness-s/adapters/dynamo";
import { systemClock } from "@harness-s/core";
import type { CallerTask } from "@harness-s/core/callers";
import { TokenPolicyClient } from "@harness-s/adapters/policy";

/** A `harness-s serve` process on a free port, its admin key, and a way to add more keys to its tables. */
export interface ServeProcess {
  url: string;
  dynamoEndpoint: string;
  adminKey: string;
  proc: ChildProcess;
  addKey: (id: string, scopes: Scope[]) => Promise<string>;
  stop: () => Promise<void>;
}

/**
 * Starts `harness-s serve` as a user would (its own process, DynamoDB Local and fauxqs, the
 * workers' thread) and resolves once it listens. `stop` sends SIGINT and waits for it to end.
 */
export async function startServe(args: string[] = []): Promise<ServeProcess> {
  const adminKey = "fairness-admin-key";
  const proc = spawn(
    "node",
    ["packages/cli/bin/harness-s.js", "serve", "--port", "0", "--api-key", adminKey, ...args],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const { url, dynamoEndpoint } = await new Promise<{ url: string; dynamoEndpoint: string }>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 120_000);
    const read = (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/listening on (http:\/\/[\d.:]+) \(DynamoDB Local at (http:\/\/[\d.:]+);/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, dynamoEndpoint: m[2]! });
      }
    };
    proc.stdout!.on("data", read);
    proc.stderr!.on("data", (c: Buffer) => (out += c.toString()));
    proc.once("exit", (code) => reject(new Error(`serve exited early with ${code}:\n${out}`)));
  });
  const keys = new DynamoApiKeyStore(
    DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: dynamoEndpoint, region: "us-east-1", credentials: localCredentials }),
    ),
    tableNames("local-"),
  );
  return {
    url,
    dynamoEndpoint,
    adminKey,
    proc,
    addKey: async (id, scopes) => {
      const { secret, record } = newApiKey(id, scopes);
      await keys.put(record);
      return secret;
    },
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGINT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
      if (proc.exitCode === null) proc.kill("SIGKILL");
    },
  };
}

export interface LatencyPhase {
  requests: number;
  p50: number;
  p99: number;
  max: number;
}

/** `POST /v1/route` of one key, one request at a time (20 ms apart) for `seconds`: its latencies. */
export async function routeLatency(serve: ServeProcess, secret: string, seconds: number): Promise<LatencyPhase> {
  const body = JSON.stringify({
    poolId: "embedded",
    task: { id: "t1", family: "app", tags: ["app", "bulk"] },
    failureTags: ["incomplete-results"],
    k: 2,
  });
  const ms: number[] = [];
  for (const end = Date.now() + seconds * 1000; Date.now() < end; ) {
    const t = performance.now();
    const res = await fetch(`${serve.url}/v1/route`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`/v1/route answered ${res.status}`);
    ms.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { requests: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: Math.max(...ms) };
}

/** A customer's own OpenEnv server: `env-serve --env embedded` in its own process, and its tasks as a caller posts them. */
export interface EnvServeProcess {
  url: string;
  proc: ChildProcess;
  tasks: CallerTask[];
}

/** Starts `harness-s env-serve --env embedded` on `host` (a free port) and resolves once it listens. */
export async function startEnvServe(host = "127.0.0.1"): Promise<EnvServeProcess> {
  const tasksOut = join(await mkdtemp(join(tmpdir(), "hs-env-serve-")), "tasks.json");
  const args = ["packages/cli/bin/harness-s.js", "env-serve", "--env", "embedded", "--host", host, "--port", "0"];
  const proc = spawn("node", [...args, "--tasks-out", tasksOut], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`env-serve did not start:\n${out}`)), 120_000);
    proc.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/OpenEnv protocol\) on (http:\/\/[\d.:]+):/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    proc.stderr!.on("data", (c: Buffer) => (out += c.toString()));
    proc.once("exit", (code) => reject(new Error(`env-serve exited early with ${code}:\n${out}`)));
  });
  const { tasks } = JSON.parse(await readFile(tasksOut, "utf8")) as { tasks: CallerTask[] };
  return { url, proc, tasks };
}

/**
 * A customer's trainer policy (`trainer-policy`, a LoRA on the tiny model) made at its own worker, and the policy
 * endpoint that registers it as `mine` (`POST /v1/policy-endpoints`).
 */
export async function trainerEndpoint(workerUrl: string, token: string) {
  await new TokenPolicyClient(workerUrl, { token, clock: systemClock }).create("trainer-policy", {
    base_model: "tiny",
    lora: { rank: 4, alpha: 8, targets: ["q_proj", "v_proj"] },
    seed: 3,
  });
  return {
    id: "mine",
    kind: "protocol-v2",
    url: workerUrl,
    policy: "trainer-policy",
    secretHeader: { name: "authorization", value: `Bearer ${token}` },
  };
}
