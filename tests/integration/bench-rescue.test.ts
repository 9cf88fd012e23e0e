import { describe, expect, it } from "vitest";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { RESCUE_CONCURRENCY, benchRescue } from "../../packages/cli/src/commands/bench-rescue.ts";

// Issue 31, acceptance 6: `bench` reports caller-rescue rollouts/s at 1, 8 and 32 in flight,
// through the service and in process, in one run (the figures themselves are the bench's to
// print, not this test's to bound).
describe("harness-s bench: caller-rescue throughput", () => {
  it("measures rescue rollouts/s through the service and in process at each concurrency, in one run", async () => {
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const lines = await benchRescue(await setup.instance(1), setup, 0.3);
    expect(lines[0]).toMatch(/^rescue rollouts\/s/);
    const rows = lines.slice(1).map((l) => /^\s+(\d+) in flight\s+([\d.]+)\s+in process\s+([\d.]+)\s+service\/in-process ([\d.]+)$/.exec(l));
    expect(rows.map((r) => Number(r?.[1]))).toEqual([...RESCUE_CONCURRENCY]);
    for (const r of rows) {
      expect(Number(r![2])).toBeGreaterThan(0);
      expect(Number(r![3])).toBeGreaterThan(0);
      expect(Number(r![4])).toBeCloseTo(Number(r![2]) / Number(r![3]), 2);
    }
  }, 120_000);
});
