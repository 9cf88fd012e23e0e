import { describe, expect, it } from "vitest";
import type { DecisionStore } from "@harness-s/core/routing";
import type { RoutingDecision } from "@harness-s/core/voting";

function decision(id: string, chosen: string[]): RoutingDecision {
  return {
    id,
    task: { id: "t", family: "app", tags: [] },
    failureTags: [],
    failedEvents: [],
    chosen,
    ranked: chosen.map((h, i) => ({ harnessId: h, score: 10 - i, firstPlaces: 0 })),
    ballots: [{ voterId: "v", ranking: chosen }],
    failures: [],
    aggregator: "borda",
    explored: false,
    poolVersion: "v",
    profileVersions: {},
  };
}

/** What every DecisionStore must do; `fresh` returns an empty store. */
export function decisionStoreContract(name: string, fresh: () => Promise<{ decisions: DecisionStore }>): void {
  describe(`DecisionStore contract: ${name}`, () => {
    it("decisions: the first write of an id wins (duplicate deliveries change nothing)", async () => {
      const s = await fresh();
      await s.decisions.put(decision("d1", ["a", "b"]));
      await s.decisions.put(decision("d1", ["c"]));
      expect((await s.decisions.get("d1"))!.chosen).toEqual(["a", "b"]);
      expect(await s.decisions.get("d2")).toBeUndefined();
    });
  });
}
