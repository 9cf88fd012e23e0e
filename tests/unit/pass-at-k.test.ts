import { describe, expect, it } from "vitest";
import { avgAtK, passAtK, scoreTasks } from "@harness-s/core/metrics";

/** Exact Pass@k by enumerating every k-subset of the n samples. */
function bruteForce(n: number, c: number, k: number): number {
  const flags = Array.from({ length: n }, (_, i) => i < c);
  let subsets = 0;
  let hits = 0;
  const walk = (start: number, chosen: number[]) => {
    if (chosen.length === k) {
      subsets++;
      if (chosen.some((i) => flags[i])) hits++;
      return;
    }
    for (let i = start; i < n; i++) walk(i + 1, [...chosen, i]);
  };
  walk(0, []);
  return hits / subsets;
}

describe("passAtK", () => {
  it("equals brute-force enumeration for every n ≤ 9, c ≤ n, k ≤ n", () => {
    for (let n = 1; n <= 9; n++)
      for (let c = 0; c <= n; c++)
        for (let k = 1; k <= n; k++) expect(passAtK(n, c, k)).toBeCloseTo(bruteForce(n, c, k), 12);
  });

  it("refuses k larger than n", () => {
    expect(() => passAtK(2, 1, 3)).toThrow(/at least 3 samples/);
  });

  it("averages Pass@3 and Avg@3 over tasks", () => {
    const s = scoreTasks([
      [true, false, false],
      [false, false, false],
    ]);
    expect(s.passAt3).toBe(0.5);
    expect(s.avgAt3).toBeCloseTo(1 / 6, 12);
    expect(avgAtK(6, 3)).toBe(0.5);
  });
});
