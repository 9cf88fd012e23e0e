import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { systemClock } from "@harness-s/core";
import type { SeedInstance } from "@harness-s/core/experiment";
import { TokenPolicyClient } from "@harness-s/adapters/policy";
import { startOpenEnvServer } from "@harness-s/adapters/openenv";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";
import { clientVenv } from "../client-venv.ts";
import { sharedPolicyWorker } from "../run-policy-worker.ts";

// Issue 55, acceptance 3 and 5, against the local service: verl's group filter and SkyRL's
// generator wrapper (harness_s_client, in its own venv: no torch) on batches whose groups all
// fail, the tiny worker the caller's policy, env-serve the caller's environment. The driver
// (packages/client-py/tests/drive_hooks.py) checks every output against the frameworks' declared
// types; a reward that lets every other rescued row win stands in for siblings that solve the
// task. Then a rescue pinned to a version the worker does not hold: the client raises the
// service's code, soon, not a timeout.
// The worker is the integration run's shared one (tests/shared-policy-worker.ts).
const WORKER_TOKEN = inject("policyWorker").token;
const client = fileURLToPath(new URL("../../packages/client-py/", import.meta.url));
let inst: SeedInstance;
let worker: { url: string };
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let secret: string;
let tasksFile: string;
let python: string;

beforeAll(async () => {
  inst = await embeddedSetup(defaultEmbeddedSettings).instance(1);
  const parts = await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" });
  [worker, envServer, python] = await Promise.all([sharedPolicyWorker(), startOpenEnvServer(parts), clientVenv()]);
  // The caller's policy is created at its worker first: the service never creates one.
  await new TokenPolicyClient(worker.url, { token: WORKER_TOKEN, clock: systemClock }).create("hooks-policy", {
    base_model: "tiny",
    seed: 5,
  });
  tasksFile = join(await mkdtemp(join(tmpdir(), "client-hooks-")), "tasks.json");
  await writeFile(tasksFile, JSON.stringify({ env: "embedded", tasks: parts.trainTasks!() }));
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst);
  secret = await addKey(stack.deps, "k-hooks", ["rescues", "pools:read"]);
  api = await startApi(stack.deps);
}, 600_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await envServer?.close();
}, 60_000);

describe("the client's verl and SkyRL hooks against the local service", () => {
  it("replace all-fail groups with rescued rows the declared types accept, and a stale version fails fast with the service's code", async () => {
    const args = [
      "--service",
      api.url,
      "--api-key",
      secret,
      "--env-url",
      envServer.url,
      "--tasks",
      tasksFile,
      "--worker-url",
      worker.url,
      "--worker-token",
      WORKER_TOKEN,
    ];
    const { stdout } = await promisify(execFile)(
      python,
      ["tests/drive_hooks.py", ...args, "--policy", "hooks-policy", "--pool", inst.evolution.pool.id],
      {
        cwd: client,
        timeout: 500_000,
        maxBuffer: 16 << 20,
      },
    );
    const got = JSON.parse(stdout);
    console.log(`client hooks: verl ${JSON.stringify(got.verl.metrics)}; stale: ${JSON.stringify(got.stale)}`);
    // Two groups each; every group all failed, so each was rescued and (some rows winning) replaced, one row per input.
    expect(got.verl.kinds).toEqual(["replaced", "replaced"]);
    expect(got.verl.rows).toEqual([2, 2]);
    expect(got.verl.types).toEqual(["AgentLoopOutput"]);
    expect(got.verl.metrics["rescue/groups_replaced"]).toBe(2);
    expect(got.verl.metrics["rescue/rollouts"]).toBeGreaterThanOrEqual(4);
    expect(got.verl.metrics["rescue/policy_tokens"]).toBeGreaterThan(0);
    expect(got.skyrl.kinds).toEqual(["replaced", "replaced"]);
    expect(got.skyrl.rows).toBe(4);
    expect(got.skyrl.rescued_rows).toBe(4);
    expect(got.skyrl.metrics["rescue/groups_replaced"]).toBe(2);
    // The service's own code for weights the worker does not hold, well before any timeout.
    expect(got.stale.code).toBe("STALE_POLICY_VERSION");
    expect(got.stale.type).not.toBe("HarnessSTimeoutError");
    expect(got.stale.seconds).toBeLessThan(60);
  }, 600_000);
});
