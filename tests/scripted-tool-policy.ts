import type { ActionChoice, Policy } from "@harness-s/core";

/**
 * A policy that plays a fixed list of tool calls, then submits with `submitArgs`: the fixture
 * tests' gold and broken agents, which learn nothing.
 */
export function scriptedCalls(
  calls: readonly (readonly [string, Record<string, unknown>])[],
  submitArgs: Record<string, unknown> = {},
): Policy {
  let i = 0;
  return {
    version: () => 0,
    act: async (): Promise<ActionChoice> =>
      i < calls.length
        ? { action: calls[i]![0], logProb: 0, args: calls[i++]![1] }
        : { action: "submit", logProb: 0, args: submitArgs },
    update: async () => ({ loss: 0 }) as never,
  };
}
