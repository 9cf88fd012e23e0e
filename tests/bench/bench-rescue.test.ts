import { describe, expect, it } from "vitest";
import { defaultEmbeddedSettings, embeddedSetup } from "@harness-s/envs";
import { RESCUE_CONCURRENCY, RESCUE_TURN_MS, benchRescue } from "../../packages/cli/src/commands/bench-rescue.ts";

const ROW_MEMORY =
  /^\s+(\d+) ms a turn\s+(\d+) in flight\s+([\d.]+)\s+in process\s+([\d.]+)\s+service\/in-process ([\d.]+)\s+CPU ms\/rollout ([\d.]+|n\/a) \(in process ([\d.]+|n\/a)\)$/;
const WARMED =
  /^ {2}warmed [\d.]+ s first: \d+ windows each way at 32 in flight, the service's last [\d.]+ rollouts\/s \(/;
const ROW =
  /^\s+(\d+) ms a turn\s+(\d+) in flight\s+([\d.]+)\s+in process\s+([\d.]+)\s+service\/in-process ([\d.]+)\s+CPU ms\/rollout ([\d.]+|n\/a) \+ ([\d.]+|n\/a) \/ ([\d.]+|n\/a) \/ ([\d.]+|n\/a) \(in process ([\d.]+|n\/a)\)\s+cores busy ([\d.]+|n\/a) \(machine ([\d.]+|n\/a)\)$/;

// Issue 31, acceptance 6, and issue 54, item 5: `bench` reports caller-rescue rollouts/s at 1, 8
// and 32 in flight, through the service and in process, for a policy that answers at once and one
// that takes 50 ms a turn, in one run, with the CPU each process spent, and the same rows for the
// same service on in-memory stores and queue (the figures themselves are the bench's to print, not
// this test's to bound).
describe("harness-s bench: caller-rescue throughput", () => {
  it("measures rescue rollouts/s through the service and in process at each latency and concurrency, in one run, with the CPU split", async () => {
    const setup = embeddedSetup(defaultEmbeddedSettings);
    const lines = await benchRescue(await setup.instance(1), setup, 0.2);
    expect(lines[0]).toMatch(/^rescue rollouts\/s/);
    expect(lines[1]).toMatch(/the API's thread .* \+ the workers' thread \/ DynamoDB Local \/ fauxqs/);
    const warmed = lines.flatMap((l, i) => (WARMED.test(l) ? [i] : []));
    expect(warmed, lines.join("\n")).toHaveLength(2);
    const [stackEnd, memoryEnd] = warmed as [number, number];
    const cells = RESCUE_TURN_MS.flatMap((ms) => RESCUE_CONCURRENCY.map((n) => [ms, n]));
    const rows = lines.slice(2, stackEnd).map((l) => ROW.exec(l));
    expect(rows.every(Boolean), lines.join("\n")).toBe(true);
    expect(rows.map((r) => [Number(r![1]), Number(r![2])])).toEqual(cells);
    for (const r of rows) {
      expect(Number(r![3])).toBeGreaterThan(0);
      expect(Number(r![4])).toBeGreaterThan(0);
      expect(Number(r![5])).toBeCloseTo(Number(r![3]) / Number(r![4]), 2);
      // Linux (CI and here): each process's CPU is read from /proc, and the service's window cost some.
      if (process.platform === "linux")
        for (const i of [6, 7, 8, 9, 10, 11, 12]) expect(r![i], lines.join("\n")).not.toBe("n/a");
    }
    // The same service on in-memory stores and queue: the same cells, each measured both ways.
    expect(lines[stackEnd + 1]).toMatch(/^ {2}the same service on in-memory stores and an in-memory queue/);
    const memory = lines.slice(stackEnd + 3, memoryEnd).map((l) => ROW_MEMORY.exec(l));
    expect(memory.every(Boolean), lines.join("\n")).toBe(true);
    expect(memory.map((r) => [Number(r![1]), Number(r![2])])).toEqual(cells);
    for (const r of memory) {
      expect(Number(r![3])).toBeGreaterThan(0);
      expect(Number(r![5])).toBeCloseTo(Number(r![3]) / Number(r![4]), 2);
      if (process.platform === "linux") expect(r![6]).not.toBe("n/a");
    }
    // Last, each latency's ratios side by side, as printed in the rows above.
    const ratio = (r: RegExpExecArray | null) => r![5];
    const bound = lines.slice(memoryEnd + 1);
    expect(bound).toEqual(
      RESCUE_TURN_MS.map(
        (ms, i) =>
          `  ${String(ms).padStart(3)} ms a turn, ${RESCUE_CONCURRENCY.join(" | ")} in flight: service/in-process ${rows
            .slice(i * 3, i * 3 + 3)
            .map(ratio)
            .join(" | ")} over DynamoDB Local and fauxqs, ${memory
            .slice(i * 3, i * 3 + 3)
            .map(ratio)
            .join(" | ")} over in-memory stores`,
      ),
    );
  }, 120_000);
});
