import type { TestProject } from "vitest/node";
import { freePort } from "@harness-s/adapters/local";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { processCpuSeconds } from "./shared-dynamodb.ts";
import { SHARED_WORKER_PID } from "./shared-worker-pid.ts";
import { startPolicyWorker } from "../packages/cli/src/policy-worker.ts";

// One policy worker (the tiny model, default settings) for the integration files that need a plain one, instead of a
// Python process each (importing torch, transformers and peft is about 5 CPU seconds a start). Each file creates
// policies under ids of its own at it, and keeps to what any worker holds: files that need the worker's settings
// changed (a chat template, rendered chat prompts, a served model's name), a killed worker or one of their own start
// their own. Started in the background when the run starts: a file waits for it with `sharedPolicyWorker()`
// (./run-policy-worker.ts).
const TOKEN = "shared-worker-token";

export default async function setup(project: TestProject) {
  const port = await freePort();
  const started = startPolicyWorker({ model: "tiny", token: TOKEN, port }, (line) => console.log(line));
  started.catch(() => undefined); // reported to the file that waits for it
  rmSync(SHARED_WORKER_PID, { force: true });
  void started.then(
    (worker) => {
      // For the CPU meter's per-test lines (tests/cpu-meter.ts).
      mkdirSync(dirname(SHARED_WORKER_PID), { recursive: true });
      if (worker.process.pid) writeFileSync(SHARED_WORKER_PID, String(worker.process.pid));
    },
    () => undefined,
  );
  project.provide("policyWorker", { url: `http://127.0.0.1:${port}`, token: TOKEN });
  return async () => {
    const worker = await started.catch(() => undefined);
    // The worker's CPU seconds, which no test file's count holds (tests/cpu-reporter.ts counts the files').
    const cpu = worker?.process.pid ? processCpuSeconds(worker.process.pid) : undefined;
    if (cpu !== undefined) console.log(`the shared policy worker: ${cpu.toFixed(1)} CPU s`);
    await worker?.stop();
    rmSync(SHARED_WORKER_PID, { force: true });
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    policyWorker: { url: string; token: string };
  }
}
