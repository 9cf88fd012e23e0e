import { describe, expect, it } from "vitest";
import { mergeSweeps, pointDiff, sweepPoints, type PairedSweep } from "../../packages/cli/src/sweeps.ts";
import { renderPairedSweep, sweepVerdict } from "../../packages/cli/src/report/paired-sweeps.ts";

const figures = (train: number, heldout: number) => ({ train, heldout, rollouts: 1000, triggered: 10, replaced: 5 });

/** A router sweep with one point whose per-seed held-out differences are `diffs`. */
function sweepOf(seeds: number[], diffs: number[]): PairedSweep {
  return {
    kind: "router",
    arms: ["harness-s", "harness-s-random"],
    protocol: "test",
    seeds,
    points: [
      {
        label: "pool 32, k 1, side effects 0",
        params: { poolSize: 32, k: 1, sideEffects: 0 },
        perSeed: seeds.map((seed, i) => ({
          seed,
          poolSize: 24,
          harm: 0.01,
          a: figures(0.8, 0.5 + diffs[i]!),
          b: figures(0.8, 0.5),
        })),
        nonstationarity: 0.4,
      },
    ],
  };
}

describe("paired sweeps", () => {
  it("merge parts on disjoint seeds into the sweep one run would give, and refuse a shared seed", () => {
    const merged = mergeSweeps([sweepOf([1, 2], [0.1, 0.2]), sweepOf([3], [0.3])]);
    expect(merged.seeds).toEqual([1, 2, 3]);
    expect(pointDiff(merged.points[0]!, "heldout").mean).toBeCloseTo(0.2, 10);
    expect(() => mergeSweeps([sweepOf([1, 2], [0, 0]), sweepOf([2], [0])])).toThrow(/share a seed/);
  });

  it("say plainly when no held-out interval excludes 0, and name the points where one does", () => {
    expect(sweepVerdict(sweepOf([1, 2, 3], [0.1, -0.1, 0.05]))).toMatch(/At no point does the held-out 95% interval/);
    const win = sweepOf([1, 2, 3, 4], [0.1, 0.12, 0.11, 0.09]);
    expect(sweepVerdict(win)).toContain(
      "harness-s beats harness-s-random on held-out (95% interval above 0) at: pool 32, k 1, side effects 0.",
    );
    expect(renderPairedSweep(win).join("\n")).toContain(
      "| 0 | 32 (24.0) | 1 | 1.0 | +0.0 (+0.0 to +0.0; 0/4) | +10.5 (+8.4 to +12.6; 4/4) | 1000 / 1000 | 5.0 / 5.0 |",
    );
  });

  it("grid: the router sweep crosses pool size, k and side effects; every point changes only its params", () => {
    const router = sweepPoints("router");
    expect(router).toHaveLength(16);
    expect(new Set(router.map((p) => p.label)).size).toBe(16);
    for (const p of router) expect(p.train).toEqual({ k: p.params.k });
    const reanchor = sweepPoints("reanchor");
    expect(reanchor).toHaveLength(6);
    expect(reanchor[0]!.settings).toEqual({});
    expect(reanchor.map((p) => p.train.reanchorBudget)).toEqual([40, 40, 40, 160, 160, 160]);
  });
});
