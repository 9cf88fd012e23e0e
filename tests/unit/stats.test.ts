import { describe, expect, it } from "vitest";
import {
  jaccard,
  meanCi95,
  pairedSummary,
  percentile,
  ranks,
  sampleStd,
  signTestP,
  spearman,
  tQuantile975,
} from "@harness-s/core/metrics";

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

  it("gives the 95% t interval of a mean (the default run's five held-out differences)", () => {
    expect(tQuantile975(4)).toBe(2.776);
    expect(tQuantile975(120)).toBeCloseTo(1.98, 2);
    expect(tQuantile975(1e6)).toBeCloseTo(1.96, 3);
    const [lo, hi] = meanCi95([-0.04, -0.058, 0.479, 0.294, -0.024]);
    expect(lo).toBeCloseTo(-0.1718, 3);
    expect(hi).toBeCloseTo(0.4322, 3);
    expect(meanCi95([0.3])).toEqual([Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY]);
  });

  it("sign test: exact two-sided binomial, ties left out", () => {
    expect(signTestP(5, 0)).toBe(0.0625);
    expect(signTestP(0, 5)).toBe(0.0625);
    expect(signTestP(3, 2)).toBe(1);
    expect(signTestP(17, 8)).toBeCloseTo(0.10775, 5);
    expect(signTestP(0, 0)).toBe(1);
    expect(pairedSummary([0.1, 0, 0.2, 0.3])).toMatchObject({ wins: 3, n: 4, signP: 0.25 });
  });
});
