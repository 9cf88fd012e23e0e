import { describe, expect, it } from "vitest";
import type { ExperimentStepStore } from "@harness-s/core/experiment";

/** What every ExperimentStepStore must do; `fresh` returns an empty store. */
export function experimentStepStoreContract(
  name: string,
  fresh: () => Promise<{ experimentSteps: ExperimentStepStore }>,
): void {
  describe(`ExperimentStepStore contract: ${name}`, () => {
    it("experiment steps: listed per run in (seed, arm, step) order, filtered, first write wins", async () => {
      const s = await fresh();
      const step = (seed: number, arm: string, n: number, meanReward = 0) => ({
        experimentId: "e1",
        seed,
        arm,
        step: n,
        policyVersion: n,
        rollouts: { train: 8 * n, rescue: 0, resample: 0, reanchor: 0, total: 8 * n },
        groups: [
          {
            taskId: "t1",
            meanReward,
            allFail: meanReward === 0,
            outcome: "replaced" as const,
            chosen: ["sib-a", "sib-b"],
          },
        ],
      });
      await Promise.all([
        s.experimentSteps.put(step(2, "grpo", 1)),
        s.experimentSteps.put(step(1, "harness-s", 2)),
        s.experimentSteps.put(step(1, "harness-s", 1)),
        s.experimentSteps.put(step(1, "grpo", 1)),
        s.experimentSteps.put(step(1, "harness-s-random", 1)),
        s.experimentSteps.put(step(10, "grpo", 1)),
      ]);
      await s.experimentSteps.put(step(1, "grpo", 1, 0.5));
      const all = await s.experimentSteps.list("e1");
      expect(all.map((x) => `${x.seed}/${x.arm}/${x.step}`)).toEqual([
        "1/grpo/1",
        "1/harness-s/1",
        "1/harness-s/2",
        "1/harness-s-random/1",
        "2/grpo/1",
        "10/grpo/1",
      ]);
      expect(all[0]!.groups[0]).toEqual({
        taskId: "t1",
        meanReward: 0,
        allFail: true,
        outcome: "replaced",
        chosen: ["sib-a", "sib-b"],
      });
      const label = (xs: { seed: number; arm: string; step: number }[]) =>
        xs.map((x) => `${x.seed}/${x.arm}/${x.step}`);
      expect(label(await s.experimentSteps.list("e1", { arm: "harness-s", seed: 1 }))).toEqual([
        "1/harness-s/1",
        "1/harness-s/2",
      ]);
      expect(label(await s.experimentSteps.list("e1", { seed: 1 }))).toEqual([
        "1/grpo/1",
        "1/harness-s/1",
        "1/harness-s/2",
        "1/harness-s-random/1",
      ]);
      expect(label(await s.experimentSteps.list("e1", { arm: "grpo" }))).toEqual(["1/grpo/1", "2/grpo/1", "10/grpo/1"]);
      expect(await s.experimentSteps.list("other")).toEqual([]);
    });
  });
}
