import { describe, expect, it } from "vitest";
import {
  renderStartGates,
  renderStartTable,
  startGates,
  type StartRow,
} from "../../packages/cli/src/suite-lm/compare.ts";

const row = (seed: number, embedded: number[], token: number[]): StartRow => ({
  seed,
  embedded: { h0: { train: 0.4, heldout: 0.05 }, siblings: { a: embedded[0]!, b: embedded[1]! } },
  tokenModel: { h0: { train: 0.3, heldout: 0 }, siblings: { a: token[0]!, b: token[1]! } },
  directions: { a: "recovery", b: "contract" },
});

describe("the before-training table", () => {
  it("puts both policies side by side per seed, with each sibling's difference from H0 and their correlation over siblings", () => {
    // Act
    const md = renderStartTable([row(1, [0.1, 0], [0.05, -0.02]), row(2, [0.2, 0.05], [0.1, 0])]);
    // Assess
    expect(md).toContain("| 1 | 40.0% / 30.0% | 5.0% / 0.0% | recovery +10.0 / +5.0; contract +0.0 / -2.0 |");
    expect(md).toMatch(
      /\| mean \| 40\.0% \/ 30\.0% \| 5\.0% \/ 0\.0% \| mean \+8\.8 \/ \+3\.3; correlation over siblings 0\.9\d \|/,
    );
  });

  it("gates a token model on its response to the siblings, the correlation of the responses and its H0 success, each against the embedded policy", () => {
    // Prepare: the token model responds at 0.5× and in step (correlation 1), H0 at 0.75×
    const rows = [row(1, [0.1, 0.2], [0.05, 0.1]), row(2, [0.3, 0], [0.15, 0])];
    // Act
    const g = startGates(rows);
    const off = startGates([row(1, [0.1, 0.2], [0.04, 0.1]), row(2, [0.3, 0], [0.1, 0.05])]);
    // Assess
    expect(g.response.ratio).toBeCloseTo(0.5);
    expect(g.correlation.value).toBeCloseTo(1);
    expect(g.h0.ratio).toBeCloseTo(0.75);
    expect(g.pass).toBe(true);
    expect(off.response.pass).toBe(false);
    expect(off.correlation.value).toBeLessThan(0.9);
    expect(renderStartGates(g)).toContain(
      "response 0.50× (≥ 0.5) pass; correlation 1.00 (≥ 0.6) pass; H0 train 0.75× (≥ 0.7) pass",
    );
  });
});
