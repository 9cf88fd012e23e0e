import { describe, expect, it } from "vitest";
import { jaccard, pairedSummary, percentile, ranks, sampleStd, spearman } from "@harness-s/core";

describe("stats", () => {
  it("ranks ties with their mean rank", () => {
    expect(ranks([10, 20, 20, 5])).toEqual([2, 3.5, 3.5, 1]);
  });

  it("computes Spearman correlation", () => {
    expect(spearman([1, 2, 3, 4], [10, 20, 30, 40])).toBeCloseTo(1, 12);
    expect(spearman([1, 2, 3, 4], [4, 3, 2, 1])).toBeCloseTo(-1, 12);
    expect(spearman([1, 1, 1], [1, 2, 3])).toBe(0);
  });

  it("computes Jaccard overlap, sample std, percentiles and paired summaries", () => {
    expect(jaccard(new Set(["a", "b"]), new Set(["b", "c"]))).toBeCloseTo(1 / 3, 12);
    expect(jaccard(new Set(), new Set())).toBe(0);
    expect(sampleStd([1, 2, 3, 4])).toBeCloseTo(Math.sqrt(5 / 3), 12);
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(pairedSummary([0.1, -0.2, 0.3])).toMatchObject({ wins: 2, n: 3 });
  });
});
