import { appendFileSync, readFileSync } from "node:fs";
import { afterAll, afterEach, beforeEach, expect } from "vitest";
import { SHARED_WORKER_PID } from "./shared-worker-pid.ts";

// Each test file's CPU seconds, in the fork that runs it: its own (user + system) and what the
// children it started and ended used (a policy worker, a CLI, a server: the kernel adds a child's
// time to its parent's once it is reaped). Written one line a file to HARNESS_S_TEST_CPU, which
// the reporter (tests/cpu-reporter.ts) reads when the run ends. Long-lived servers the whole run
// shares (DynamoDB Local, the shared policy worker) are counted in no file. Each test gets a line
// too (its own part of the file's count; its hooks' part is the file's), with the shared policy
// worker's CPU seconds while it ran: an upper bound, since files running beside it may use the
// worker in the same seconds.

const file = process.env.HARNESS_S_TEST_CPU;
const TICKS = 100; // clock ticks a second (Linux's USER_HZ)

/** A process's CPU seconds so far (`/proc/<pid>/stat`), its reaped children's included for this process. */
function cpuSeconds(pid: number | "self" = "self"): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (pid === "self" ? [11, 12, 13, 14] : [11, 12]).reduce((n, i) => n + Number(fields[i]), 0) / TICKS;
  } catch {
    return 0;
  }
}

/** The shared policy worker's pid, once it has started (tests/shared-policy-worker.ts writes it); read until found. */
let workerPid: number | undefined;
function sharedWorkerPid(): number | undefined {
  try {
    workerPid ??= Number(readFileSync(SHARED_WORKER_PID, "utf8")) || undefined;
  } catch {
    // not started yet, or no integration run
  }
  return workerPid;
}

const write = (line: object) => {
  if (file) appendFileSync(file, `${JSON.stringify(line)}\n`);
};

// Run again before each file (a setup file is), so the count starts before the file's own imports.
const started = cpuSeconds();
let testStarted = { self: 0, worker: 0 };
beforeEach(() => {
  const pid = sharedWorkerPid();
  testStarted = { self: cpuSeconds(), worker: pid ? cpuSeconds(pid) : 0 };
});
afterEach((context) => {
  const pid = sharedWorkerPid();
  const test = context.task.name;
  const testFile = expect.getState().testPath;
  write({
    file: testFile,
    test,
    cpuSeconds: cpuSeconds() - testStarted.self,
    sharedWorkerSeconds: pid ? cpuSeconds(pid) - testStarted.worker : 0,
  });
});
afterAll(() => {
  const testFile = expect.getState().testPath;
  if (testFile) write({ file: testFile, cpuSeconds: cpuSeconds() - started });
});
