import { describe, expect, it } from "vitest";
import { parseSeedList } from "../../packages/cli/src/seeds.ts";

describe("--seeds", () => {
  it("takes integers and inclusive ranges, in the order given", () => {
    expect(parseSeedList("1,2,3")).toEqual([1, 2, 3]);
    expect(parseSeedList("6-9, 2")).toEqual([6, 7, 8, 9, 2]);
    expect(parseSeedList("0")).toEqual([0]);
  });

  it("refuses what would be misread, with a readable reason", () => {
    expect(() => parseSeedList("1,x")).toThrow(/comma-separated non-negative integers or ranges[\s\S]*"x"/);
    expect(() => parseSeedList("5-1")).toThrow(/runs backwards/);
    expect(() => parseSeedList("1-3,2")).toThrow(/seed 2 is listed twice/);
    expect(() => parseSeedList("1.5")).toThrow(/integers/);
    expect(() => parseSeedList("")).toThrow(/integers/);
    expect(() => parseSeedList("1-5000")).toThrow(/longer than 1000/);
    expect(() => parseSeedList("-1")).toThrow(/non-negative integers/);
    expect(() => parseSeedList("3,-2-4")).toThrow(/non-negative integers/);
  });
});
