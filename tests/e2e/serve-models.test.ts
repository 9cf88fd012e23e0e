import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { localCredentials } from "@harness-s/adapters/local";
import { tableNames } from "@harness-s/adapters/dynamo";
import { ensureWorkerVenv } from "../../packages/cli/src/policy-worker.ts";

// `serve --models a=DIR1,b=DIR2` with two tiny model folders (the worker's tiny Llama, saved as a
// Hugging Face folder, seeds 0 and 1): one policy worker per model, listed by GET /v1/models, an
// experiment on one of them trained at its worker through the local stack, and every worker
// gone once serve is.

const KEY = "test-key";
let proc: ChildProcess;
let url = "";
let dynamoEndpoint = "";
let logs = "";
let folders = "";
/** Each model's worker, from serve's log: its URL. */
const workerUrls: Record<string, string> = {};

beforeAll(async () => {
  const python = await ensureWorkerVenv();
  folders = await mkdtemp(join(tmpdir(), "hs-models-"));
  await promisify(execFile)(
    python,
    [
      "-c",
      "import sys\nfrom harness_s_worker.tiny import build_tiny\nfor seed, out in enumerate(sys.argv[1:]):\n    model, tokenizer = build_tiny(seed)\n    model.save_pretrained(out)\n    tokenizer.save_pretrained(out)",
      join(folders, "one"),
      join(folders, "two"),
    ],
    { env: { ...process.env, TOKENIZERS_PARALLELISM: "false" } },
  );
  const models = `a=${join(folders, "one")},b=${join(folders, "two")}`;
  proc = spawn(
    "node",
    ["packages/cli/bin/harness-s.js", "serve", "--port", "0", "--api-key", KEY, "--models", models],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  for (const stream of [proc.stdout!, proc.stderr!]) stream.on("data", (chunk: Buffer) => (logs += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${logs}`)), 240_000);
    proc.stdout!.on("data", () => {
      const m = logs.match(/listening on (http:\/\/[\d.:]+) \(DynamoDB Local at (http:\/\/[\d.:]+);/);
      if (m) {
        [url, dynamoEndpoint] = [m[1]!, m[2]!];
        clearTimeout(timer);
        resolve();
      }
    });
    proc.once("exit", (code) => reject(new Error(`serve exited early with ${code}:\n${logs}`)));
  });
  for (const m of logs.matchAll(/model (\w+): \S+ at the policy worker on (http:\/\/[\d.:]+)/g))
    workerUrls[m[1]!] = m[2]!;
}, 300_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) proc.kill("SIGKILL");
  if (folders) await rm(folders, { recursive: true, force: true });
});

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
/** A worker's own report of itself (no token needed): its process id and how many sampling steps it ran. */
const healthOf = async (model: string) =>
  (await (await fetch(`${workerUrls[model]}/healthz`)).json()) as {
    pid: number;
    model: string;
    sampler: { steps: number };
  };
const tiny = {
  seeds: [1],
  arms: ["grpo", "harness-s"],
  train: { steps: 1, batchSize: 1, groupSize: 2, curveEvery: 0, auditEvery: 0, reanchorBudget: 0 },
  evalTasks: 1,
  evalSamples: 3,
};

async function experimentRecords(): Promise<unknown[]> {
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: dynamoEndpoint, region: "us-east-1", credentials: localCredentials }),
  );
  try {
    return (await doc.send(new ScanCommand({ TableName: tableNames("local-").Experiments }))).Items ?? [];
  } finally {
    doc.destroy();
  }
}

describe("harness-s serve --models", () => {
  it("lists both models with what their workers read from the folders, at the default prices", async () => {
    const res = await call("GET", "/v1/models");
    expect(res.status).toBe(200);
    const { models } = await res.json();
    expect(models.map((m: { name: string }) => m.name)).toEqual(["a", "b"]);
    for (const m of models)
      expect(m).toEqual({
        name: m.name,
        parameters: expect.any(Number),
        contextTokens: 4096,
        chatTemplate: "chatml",
      });
    expect(models[0].parameters).toBeGreaterThan(50_000);
    expect(models[0].parameters).toBe(models[1].parameters);
    expect(Object.keys(workerUrls).sort()).toEqual(["a", "b"]);
    expect((await healthOf("a")).model).toBe("a");
  });

  it("refuses a model it does not serve: a 400 naming the served ones, nothing recorded", async () => {
    const res = await call("POST", "/v1/experiments", { ...tiny, model: "c" });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.issues).toEqual(["this deployment serves a, b, not c"]);
    expect(await experimentRecords()).toEqual([]);
  });

  it("trains each arm's own adapter on the model asked for, at its worker, to done", async () => {
    const before = { a: (await healthOf("a")).sampler.steps, b: (await healthOf("b")).sampler.steps };
    const started = await call("POST", "/v1/experiments", { ...tiny, model: "a" });
    expect(started.status).toBe(202);
    const { id } = await started.json();
    let status = { status: "queued", error: null as string | null };
    for (let i = 0; i < 1_500 && !["done", "failed", "stopped", "cancelled"].includes(status.status); i++) {
      await new Promise((r) => setTimeout(r, 200));
      status = await (await call("GET", `/v1/experiments/${id}`)).json();
    }
    expect(status, logs.slice(-4000)).toMatchObject({ status: "done", error: null });
    const metrics = await (await call("GET", `/v1/experiments/${id}/metrics`)).json();
    expect(metrics.results.map((r: { arm: string }) => r.arm).sort()).toEqual(["grpo", "harness-s"]);
    expect((await healthOf("a")).sampler.steps).toBeGreaterThan(before.a);
    expect((await healthOf("b")).sampler.steps).toBe(before.b);
  }, 300_000);

  it("stops every model's worker when it stops", async () => {
    const pids = [(await healthOf("a")).pid, (await healthOf("b")).pid];
    const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
    proc.kill("SIGTERM");
    expect(await exited).toBe(0);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 50 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    expect(pids.filter(alive)).toEqual([]);
  }, 60_000);
});
