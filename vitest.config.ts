import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    pool: "forks",
    // Two test files at a time on the 2-core CI machine (the default is cores − 1 = one): most
    // integration files wait on DynamoDB Local, fauxqs, MariaDB or the Python worker.
    maxWorkers: 2,
    testTimeout: 60_000,
  },
});
