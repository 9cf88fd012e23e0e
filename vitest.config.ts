import { defineConfig } from "vitest/config";

// Three test files at a time on the 2-core machine: most integration files wait on a server
// (DynamoDB Local, fauxqs, MariaDB, the policy worker, a spawned CLI), so one per core leaves the
// cores idle. Every file shares one module graph per worker (isolate: false): most of a unit
// file's cost was importing the workspace again, and the integration files' imports took 64 s of
// their 418 s (11 s shared; the project's CPU 752 s -> 699 s on the idle machine). Integration
// files share one DynamoDB Local (tests/shared-dynamodb.ts).
// Benchmarks (tests/bench/): `npm run bench` runs them, `npm test` does not (its script names the other projects). They
// compare wall-clock figures measured minutes apart (a quote's compute seconds, calibrated by one run, against the
// next run's) or measure throughput, so they run one file at a time: files beside them would load one of two runs and
// not the other (CI at 8370d9c: a calibration's compute seconds 1.8 times its predicted run's, the charge 23.5% off).
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
          // One DynamoDB Local and one policy worker (the tiny model) for the files that need a plain one.
          globalSetup: ["tests/cli-build.ts", "tests/shared-dynamodb.ts", "tests/shared-policy-worker.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "bench",
          include: ["tests/bench/**/*.test.ts"],
          globalSetup: ["tests/shared-dynamodb.ts"],
          maxWorkers: 1,
        },
      },
    ],
  },
});
