import { describe, expect, it } from "vitest";
import { differingKeys, firstRepeated } from "@harness-s/core";

describe("record and list comparison", () => {
  it("names the keys whose values differ, deeply, including keys on one side only", () => {
    expect(differingKeys({ a: 1, b: [2], d: { x: 1 } }, { a: 1, b: [3], c: 0, d: { x: 1 } })).toEqual(["b", "c"]);
    expect(differingKeys({}, {})).toEqual([]);
  });

  it("finds the first value seen twice", () => {
    expect(firstRepeated([1, 2, 3, 2, 1])).toBe(2);
    expect(firstRepeated([1, 2, 3])).toBeUndefined();
  });
});
