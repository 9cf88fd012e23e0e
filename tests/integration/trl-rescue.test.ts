import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startOpenEnvServer } from "@harness-s/adapters/openenv";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import type { LocalStack } from "@harness-s/functions/local";
import { builtinOpenEnv } from "../../packages/cli/src/commands/env-serve.ts";
import { ensureWorkerVenv } from "../../packages/cli/src/policy-worker.ts";
import { addKey, startApi } from "../api-factory.ts";
import { startCallerRescueStack } from "../caller-stack.ts";

// Issue 31, acceptance 2: a TRL GRPOTrainer (tiny model, CPU, two steps) with
// rescue_rollout_func. The trainer's own model is the policy (served from its process at its
// step), env-serve the environment, the local stack the service. The driver runs
// packages/policy-worker/examples/trl_rescue.py with a reward under which rescued rows can win,
// records inside compute_loss what the trainer trains on, and records the token rows the service
// sent; it reports whether each replaced group's rows were trained on exactly as returned.
const worker = fileURLToPath(new URL("../../packages/policy-worker/", import.meta.url));
let envServer: Awaited<ReturnType<typeof startOpenEnvServer>>;
let stack: LocalStack;
let api: Awaited<ReturnType<typeof startApi>>;
let secret: string;
let tasksFile: string;
let baseHarness: string;
let poolId: string;

beforeAll(async () => {
  const inst = await embeddedSetup(defaultEmbeddedSettings).instance(1);
  await ensureWorkerVenv();
  const parts = await builtinOpenEnv({ env: "embedded", engine: "sqlite", mysqlUrl: "mysql://x@127.0.0.1" });
  envServer = await startOpenEnvServer(parts);
  tasksFile = join(await mkdtemp(join(tmpdir(), "trl-rescue-")), "tasks.json");
  await writeFile(tasksFile, JSON.stringify({ env: "embedded", tasks: parts.trainTasks!() }));
  stack = await startCallerRescueStack(inject("dynamoEndpoint"), inst);
  baseHarness = inst.evolution.pool.base.id;
  poolId = inst.evolution.pool.id;
  secret = await addKey(stack.deps, "k-trl", ["rescues", "pools:read"]);
  api = await startApi(stack.deps);
}, 600_000);
afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await envServer?.close();
}, 60_000);

describe("TRL's GRPOTrainer with rescue_rollout_func", () => {
  it("replaces all-fail groups with rescued rows sampled from the trainer's weights, and trains on exactly the ids the service returned", async () => {
    const python = await ensureWorkerVenv();
    const report = join(tasksFile, "..", "report.json");
    await promisify(execFile)(
      python,
      [
        "tests/trl_rescue_driver.py",
        "--service",
        api.url,
        "--api-key",
        secret,
        "--env-url",
        envServer.url,
        "--tasks",
        tasksFile,
        "--pool",
        poolId,
        "--steps",
        "2",
        "--report",
        report,
      ],
      { cwd: worker, timeout: 400_000, maxBuffer: 16 << 20 },
    );
    const got = JSON.parse(await readFile(report, "utf8"));
    expect(got.steps).toBe(2);
    // Two steps of two groups each; the tiny model fails every task under H0, so each group is rescued.
    expect(got.groups.replaced).toBeGreaterThanOrEqual(1);
    expect(got.replaced_rows).toBe(got.groups.replaced * 2);
    // Asserted through the trainer: every replaced row is among the rows compute_loss saw, with
    // the same prompt ids, completion ids and loss mask as the service sent (broken once: the
    // wrapper handing TRL an all-ones env_mask matches none).
    expect(got.replaced_rows_trained_as_returned).toBe(got.replaced_rows);
    // Every row sampled at the trainer's step when its batch was generated: never mixed.
    expect(got.weight_versions).toEqual([
      [0, 0],
      [1, 1],
    ]);
    // The replacing rows ran under routed siblings, not H0.
    expect(got.harnesses.length).toBeGreaterThan(0);
    expect(got.harnesses).not.toContain(baseHarness);
    // The rescue metrics reached the trainer's own logger (TRL's log history, which W&B and
    // TensorBoard are fed from): one entry per logged step, every group of it counted.
    expect(got.logged).toHaveLength(2);
    for (const entry of got.logged)
      expect(entry["rescue/groups_kept"] + entry["rescue/groups_replaced"] + entry["rescue/groups_unrescued"]).toBe(2);
    expect(got.logged.reduce((n: number, e: Record<string, number>) => n + (e["rescue/groups_replaced"] ?? 0), 0)).toBe(
      got.groups.replaced,
    );
    expect(got.logged.every((e: Record<string, number>) => (e["rescue/policy_tokens"] ?? 0) > 0)).toBe(true);
    // Rows end as the policy ended them: each on its EOS, or cut at the turn's token limit; none lost its EOS.
    console.log(`trl rescue: ${JSON.stringify(got.eos)}; logged ${JSON.stringify(got.logged)}`);
    expect(got.eos.eos_dropped).toBe(0);
  }, 600_000);
});
