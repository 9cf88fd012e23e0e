import { describe, expect, it } from "vitest";
import { createRng, type Rollout, type RolloutStore } from "@harness-s/core";

/** A rollout whose trajectory is `steps` long, filled with poorly compressible text. */
export function bigRollout(steps: number, seed = 1): Rollout {
  const rng = createRng(seed);
  const noise = () => Array.from({ length: 300 }, () => rng.int(16).toString(16)).join("");
  return {
    id: `big-${seed}`,
    taskId: "t",
    family: "app",
    harnessId: "sib",
    policyVersion: 1,
    seed,
    reward: 1,
    success: true,
    failureTags: [],
    events: ["start"],
    behaviours: {},
    steps: Array.from({ length: steps }, () => ({
      observation: {
        family: "app",
        tools: ["submit"],
        event: noise(),
        facts: [],
        taskTags: [],
        hints: [],
        baseHints: [],
        failedActions: [],
        turnsLeft: 1,
      },
      action: "submit",
      logProb: -0.5,
      forced: false,
      intercepted: false,
      result: "ok",
    })),
  };
}

/** What every RolloutStore must do; `fresh` returns an empty store. */
export function rolloutStoreContract(name: string, fresh: () => Promise<{ rollouts: RolloutStore }>): void {
  describe(`RolloutStore contract: ${name}`, () => {
    it("rollouts: round-trip in index order, the first write of a key wins, multi-megabyte trajectories survive", async () => {
      const s = await fresh();
      const small = bigRollout(2, 2);
      expect(await s.rollouts.put("job", 1, small)).toBe("stored");
      expect(await s.rollouts.put("job", 1, { ...small, reward: 0, success: false })).toBe("duplicate");
      const big = bigRollout(4000, 3);
      expect(JSON.stringify(big).length).toBeGreaterThan(1_000_000);
      expect(await s.rollouts.put("job", 0, big)).toBe("stored");
      const listed = await s.rollouts.list("job");
      expect(listed.map((r) => r.index)).toEqual([0, 1]);
      expect(listed[0]!.rollout).toEqual(big);
      expect(listed[1]!.rollout.success).toBe(true);
      expect(await s.rollouts.list("other")).toEqual([]);
      expect(await s.rollouts.has("job", 0)).toBe(true);
      expect(await s.rollouts.has("job", 2)).toBe(false);
      expect(await s.rollouts.get("job", 0)).toEqual(big);
      expect(await s.rollouts.get("job", 2)).toBeUndefined();
      // A status read's summaries: what the listed rollouts show, in index order, the first write's (a chunked
      // rollout's too).
      expect(await s.rollouts.summaries("job")).toEqual([
        { index: 0, harnessId: "sib", reward: 1, success: true, failureTags: [], steps: 4000 },
        { index: 1, harnessId: "sib", reward: 1, success: true, failureTags: [], steps: 2 },
      ]);
      expect(await s.rollouts.summaries("other")).toEqual([]);
    }, 60_000);

    it("rollouts put at once: each stored once; one stored already and a slot asked twice are duplicates", async () => {
      const s = await fresh();
      expect(await s.rollouts.put("burst", 3, bigRollout(2, 30))).toBe("stored");
      const shown = await Promise.all([
        ...[0, 1, 2, 3, 4, 5].map((i) => s.rollouts.put("burst", i, bigRollout(2, i))),
        s.rollouts.put("burst", 5, bigRollout(2, 50)),
      ]);
      expect(shown.slice(0, 4)).toEqual(["stored", "stored", "stored", "duplicate"]);
      expect(shown.slice(4, 7).sort()).toEqual(["duplicate", "stored", "stored"]);
      const listed = await s.rollouts.list("burst");
      expect(listed.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(listed[3]!.rollout).toEqual(bigRollout(2, 30));
    }, 60_000);
  });
}
