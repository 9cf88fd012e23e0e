import { describe, expect, it } from "vitest";
import { failureSummary, isAllFail, rescueGroup, splitRollouts } from "@harness-s/core/training";
import type { HarnessSpec, Task } from "@harness-s/core";
import { makeRollout, makeSpec, makeTask } from "../factories.ts";

const sibA = makeSpec({ id: "sib-a", provenance: { direction: "contract" } });
const sibB = makeSpec({ id: "sib-b", provenance: { direction: "recovery" } });

describe("rescue", () => {
  it("detects an all-fail group", () => {
    expect(isAllFail([makeRollout(), makeRollout()])).toBe(true);
    expect(isAllFail([makeRollout(), makeRollout({ success: true, reward: 1 })])).toBe(false);
    expect(isAllFail([])).toBe(false);
  });

  it("splits the rollouts evenly over the k siblings", () => {
    expect(splitRollouts(4, 2)).toEqual([2, 2]);
    expect(splitRollouts(5, 2)).toEqual([3, 2]);
    expect(splitRollouts(4, 3)).toEqual([2, 1, 1]);
    expect(splitRollouts(4, 0)).toEqual([]);
  });

  it("summarises failure tags and events by frequency", () => {
    const s = failureSummary([
      makeRollout({ failureTags: ["a", "b"], events: ["start", "e1"] }),
      makeRollout({ failureTags: ["b"], events: ["start", "e2", "e1"] }),
    ]);
    expect(s.tags).toEqual(["b", "a"]);
    expect(s.events).toEqual(["e1", "e2"]);
  });

  it("replaces the failed group when the rescue group has reward variance", async () => {
    const calls: string[] = [];
    const runner = async (_task: Task, h: HarnessSpec, seed: number) => {
      calls.push(`${h.id}:${seed}`);
      return makeRollout({ harnessId: h.id, seed, success: h.id === "sib-b", reward: h.id === "sib-b" ? 1 : 0 });
    };
    const out = await rescueGroup(makeTask(), [sibA, sibB], 4, (i) => 100 + i, runner);
    expect(out.kind).toBe("replaced");
    expect(calls).toEqual(["sib-a:100", "sib-a:101", "sib-b:102", "sib-b:103"]);
    expect(out.group).toHaveLength(4);
  });

  it("drops the group when every rescue rollout fails too", async () => {
    const out = await rescueGroup(
      makeTask(),
      [sibA, sibB],
      4,
      (i) => i,
      async (_t, h) => makeRollout({ harnessId: h.id }),
    );
    expect(out.kind).toBe("dropped");
    expect(out.group).toHaveLength(4);
  });
});
