import { defineConfig } from "vitest/config";

// Three test files at a time on the 2-core machine: most files wait on a server (DynamoDB Local,
// fauxqs, MariaDB, the policy worker, a spawned CLI), so one per core leaves the cores idle.
// Vitest's default here would be one file at a time (cores − 1).
export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    pool: "forks",
    maxWorkers: 3,
    testTimeout: 60_000,
  },
});
