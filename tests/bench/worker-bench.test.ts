import { describe, expect, it } from "vitest";
import { benchWorker } from "../../packages/cli/src/commands/bench-worker.ts";

// `harness-s bench --worker`: the worker's sampling tokens/s at 1, 8 and 32 episodes over HTTP against batched
// generate in one process, and its updates against a direct loop, in one run (a benchmark: `npm run bench`).
describe("bench --worker", () => {
  it("prints sampling at 1, 8 and 32 episodes against batched generate, and updates against a direct loop", async () => {
    const out = (await benchWorker(0.1, "tiny", { maxTokens: 16, updateDatums: 8 })).join("\n"); // sizes kept small: the output's shape is under test
    for (const n of ["1", "8", "32"])
      expect(out).toMatch(
        new RegExp(`worker sample tokens/s, +${n} episodes +\\d+ over HTTP vs \\d+/s batched generate`),
      );
    expect(out).toMatch(/worker sample tokens\/s at 32 episodes over 1: \d+\.\d+×/);
    expect(out).toMatch(/worker update tokens\/s +\d+ over HTTP vs \d+\/s driven directly/);
  }, 600_000);
});
