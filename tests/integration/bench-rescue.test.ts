import { describe, expect, it } from "vitest";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { RESCUE_CONCURRENCY, RESCUE_TURN_MS, benchRescue } from "../../packages/cli/src/commands/bench-rescue.ts";

const ROW =
  /^\s+(\d+) ms a turn\s+(\d+) in flight\s+([\d.]+)\s+in process\s+([\d.]+)\s+service\/in-process ([\d.]+)\s+CPU ms\/rollout ([\d.]+|n\/a) \+ ([\d.]+|n\/a) \/ ([\d.]+|n\/a) \/ ([\d.]+|n\/a) \(in process ([\d.]+|n\/a)\)\s+cores busy ([\d.]+|n\/a) \(machine ([\d.]+|n\/a)\)$/;

// Issue 31, acceptance 6, and issue 54, item 5: `bench` reports caller-rescue rollouts/s at 1, 8
// and 32 in flight, through the service and in process, for a policy that answers at once and one
// that takes 50 ms a turn, in one run, with the CPU each process spent (the figures themselves are
// the bench's to print, not this test's to bound).
describe("harness-s bench: caller-rescue throughput", () => {
  it("measures rescue rollouts/s through the service and in process at each latency and concurrency, in one run, with the CPU split", async () => {
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const lines = await benchRescue(await setup.instance(1), setup, 0.2);
    expect(lines[0]).toMatch(/^rescue rollouts\/s/);
    expect(lines[1]).toMatch(/the API's thread .* \+ the workers' thread \/ DynamoDB Local \/ fauxqs/);
    expect(lines.at(-1)).toMatch(/^ {2}warmed [\d.]+ s first: \d+ windows each way at 32 in flight, the service's last [\d.]+ rollouts\/s \(/);
    const rows = lines.slice(2, -1).map((l) => ROW.exec(l));
    expect(rows.every(Boolean), lines.join("\n")).toBe(true);
    expect(rows.map((r) => [Number(r![1]), Number(r![2])])).toEqual(RESCUE_TURN_MS.flatMap((ms) => RESCUE_CONCURRENCY.map((n) => [ms, n])));
    for (const r of rows) {
      expect(Number(r![3])).toBeGreaterThan(0);
      expect(Number(r![4])).toBeGreaterThan(0);
      expect(Number(r![5])).toBeCloseTo(Number(r![3]) / Number(r![4]), 2);
      // Linux (CI and here): each process's CPU is read from /proc, and the service's window cost some.
      if (process.platform === "linux") for (const i of [6, 7, 8, 9, 10, 11, 12]) expect(r![i], lines.join("\n")).not.toBe("n/a");
    }
  }, 120_000);
});
