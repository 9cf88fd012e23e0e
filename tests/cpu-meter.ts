import { appendFileSync, readFileSync } from "node:fs";
import { afterAll, expect } from "vitest";

// Each test file's CPU seconds, in the fork that runs it: its own (user + system) and what the
// children it started and ended used (a policy worker, a CLI, a server: the kernel adds a child's
// time to its parent's once it is reaped). Written one line a file to HARNESS_S_TEST_CPU, which
// the reporter (tests/cpu-reporter.ts) reads when the run ends. Long-lived servers the whole run
// shares (DynamoDB Local) are counted in no file.

const file = process.env.HARNESS_S_TEST_CPU;
const TICKS = 100; // clock ticks a second (Linux's USER_HZ)

/** This process's CPU seconds so far, its reaped children's included (`/proc/self/stat`: utime, stime, cutime, cstime). */
function cpuSeconds(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return [11, 12, 13, 14].reduce((n, i) => n + Number(fields[i]), 0) / TICKS;
}

// Run again before each file (a setup file is), so the count starts before the file's own imports.
const started = cpuSeconds();
afterAll(() => {
  const testFile = expect.getState().testPath;
  if (file && testFile)
    appendFileSync(file, `${JSON.stringify({ file: testFile, cpuSeconds: cpuSeconds() - started })}\n`);
});
