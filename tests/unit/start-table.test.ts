import { describe, expect, it } from "vitest";
import { renderStartTable, type StartRow } from "../../packages/cli/src/suite-lm/compare.ts";

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
    expect(md).toMatch(/\| mean \| 40\.0% \/ 30\.0% \| 5\.0% \/ 0\.0% \| mean \+8\.8 \/ \+3\.3; correlation over siblings 0\.9\d \|/);
  });
});
