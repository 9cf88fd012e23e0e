import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ensureWorkerVenv } from "../../packages/cli/src/policy-worker.ts";

// The worker's own tests (pytest, in its venv), in a file of their own so they run beside the
// TypeScript side's worker tests. The venv is created first when it is missing.
describe("the worker's own test suite", () => {
  it("passes (pytest, in the worker's venv)", async () => {
    const python = await ensureWorkerVenv();
    const cwd = fileURLToPath(new URL("../../packages/policy-worker/", import.meta.url));
    const { stdout } = await promisify(execFile)(
      python,
      ["-m", "pytest", "-q", "-p", "no:warnings", "-p", "no:cacheprovider"],
      { cwd },
    );
    expect(stdout).toMatch(/(\d+) passed/);
    expect(stdout).not.toMatch(/failed|error/i);
  }, 600_000);
});
