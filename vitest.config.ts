import { defineConfig } from "vitest/config";

// Three test files at a time on the 2-core machine: most integration files wait on a server
// (DynamoDB Local, fauxqs, MariaDB, the policy worker, a spawned CLI), so one per core leaves the
// cores idle. Every file shares one module graph per worker (isolate: false): most of a unit
// file's cost was importing the workspace again, and the integration files' imports took 64 s of
// their 418 s (11 s shared; the project's CPU 752 s -> 699 s on the idle machine). Integration
// files share one DynamoDB Local (tests/shared-dynamodb.ts).
// Files that compare wall-clock figures measured minutes apart (a quote's compute seconds,
// calibrated by one run, against the next run's) run after every other file, alone: files beside
// them would load one of the two runs and not the other (CI at 8370d9c: a calibration's compute
// seconds 1.8 times its predicted run's, the charge 23.5% off). The rescue bench's test joins them:
// it measures both stacks for 40 s alone here, and beside other files it ran past its 120 s (CI at
// c7e4587). One worker: the files of this project run one after another, none beside another.
const ALONE = ["tests/integration/experiment-quotes.test.ts", "tests/integration/bench-rescue.test.ts"];

export default defineConfig({
  test: {
    pool: "forks",
    maxWorkers: 3,
    isolate: false,
    testTimeout: 60_000,
    // Each file's CPU seconds (tests/cpu-meter.ts), summed and shown when the run ends (tests/cpu-reporter.ts).
    setupFiles: ["tests/cpu-meter.ts"],
    reporters: ["default", "./tests/cpu-reporter.ts"],
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["tests/unit/**/*.test.ts"], exclude: ["tests/unit/isolated/**"] },
      },
      // Files that replace a module (vi.mock) get a module graph of their own: in the shared graph
      // a file run earlier may have loaded the real module already.
      { extends: true, test: { name: "unit-isolated", include: ["tests/unit/isolated/**/*.test.ts"], isolate: true } },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["tests/integration/**/*.test.ts", "tests/e2e/**/*.test.ts", "tests/infra/**/*.test.ts"],
          exclude: ALONE,
          globalSetup: ["tests/shared-dynamodb.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "integration-alone",
          include: ALONE,
          globalSetup: ["tests/shared-dynamodb.ts"],
          sequence: { groupOrder: 1 },
          maxWorkers: 1,
        },
      },
    ],
  },
});
