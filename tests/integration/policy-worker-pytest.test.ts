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

  // The client's verl hook (harness_s_client/verl.py) needs torch and numpy, which the client's own venv does not
  // hold (tests/integration/client-py.test.ts skips it there): here it runs in the worker's, and must not skip.
  it("the client's verl hook tests pass in the worker's venv, none skipped", async () => {
    const python = await ensureWorkerVenv();
    const cwd = fileURLToPath(new URL("../../packages/client-py/", import.meta.url));
    const { stdout } = await promisify(execFile)(
      python,
      ["-m", "pytest", "-q", "-p", "no:warnings", "-p", "no:cacheprovider", "tests/test_verl_hook.py"],
      { cwd },
    );
    expect(stdout).toMatch(/\b([5-9]|\d{2,}) passed/);
    expect(stdout).not.toMatch(/failed|error|skipped/i);
  }, 120_000);
});
