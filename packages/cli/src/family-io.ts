import type { FamilyIo } from "@harness-s/envs";
import { prepareOutDir } from "./out-dir.ts";
import { ensureWorkerVenv } from "./policy-worker.ts";
import { createProgress } from "./progress.ts";

/**
 * What the CLI lends a family it runs: `log` for its lines, the policy worker's venv as its Python, a progress bar,
 * `--out` checks.
 */
export const cliIo = (log: (line: string) => void): FamilyIo => ({
  log,
  python: () => ensureWorkerVenv(log),
  progress: createProgress,
  prepareOutDir,
});
