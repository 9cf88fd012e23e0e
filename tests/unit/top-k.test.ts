import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { DEFAULT_TOP_K, MAX_TOP_K, routerOptions } from "@harness-s/core/voting";
import { RescueRequest } from "@harness-s/core/rescue";
import { RouteRequest } from "@harness-s/core/routing";
import { TrainConfig } from "@harness-s/core/training";
import { TrainOverrides } from "@harness-s/core/experiment";

// Every place a `k` is taken derives it from one TopK: the same bounds and the same default.
const carriers: [string, (k: number | undefined) => z.ZodSafeParseResult<{ k: number }>][] = [
  [
    "RouteRequest",
    (k) => RouteRequest.safeParse({ poolId: "p", task: { id: "t", family: "app" }, ...(k === undefined ? {} : { k }) }),
  ],
  [
    "RescueRequest",
    (k) => RescueRequest.safeParse({ poolId: "p", taskId: "t", failureTags: ["x"], ...(k === undefined ? {} : { k }) }),
  ],
  ["TrainConfig", (k) => TrainConfig.safeParse(k === undefined ? {} : { k })],
  [
    "the API's training overrides",
    (k) => TrainOverrides.safeParse(k === undefined ? { k: DEFAULT_TOP_K } : { k }) as never,
  ],
  [
    "router options",
    (k) => {
      try {
        return { success: true, data: routerOptions(k === undefined ? {} : { k }) } as never;
      } catch (error) {
        return { success: false, error } as never;
      }
    },
  ],
];

describe("TopK: one bound and one default for every k", () => {
  it.each(carriers)(
    "%s takes 1..MAX_TOP_K, refuses 0 and MAX_TOP_K + 1, and defaults to DEFAULT_TOP_K",
    (_name, parse) => {
      expect(parse(1).success).toBe(true);
      expect(parse(MAX_TOP_K).success).toBe(true);
      expect(parse(0).success).toBe(false);
      expect(parse(MAX_TOP_K + 1).success).toBe(false);
      expect(parse(undefined).data?.k).toBe(DEFAULT_TOP_K);
    },
  );
});
