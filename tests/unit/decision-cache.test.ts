import { describe, expect, it } from "vitest";
import { ManualClock, createPool } from "@harness-s/core";
import { RouteRequest, routeTask } from "@harness-s/core/routing";
import { statisticalVoters, type BallotRequest, type Voter } from "@harness-s/core/voting";
import {
  MemoryDecisionCache,
  MemoryDecisionStore,
  MemoryPoolStore,
  MemoryProfileStore,
} from "@harness-s/adapters/stores";
import { makeProfile, makeSpec } from "../factories.ts";

/** A voter that counts how often it is asked (an LLM voter's tokens, in a real panel). */
function countingVoter(): Voter & { asked: number } {
  const inner = statisticalVoters[0]!;
  const voter = {
    id: inner.id,
    asked: 0,
    vote: (req: BallotRequest) => {
      voter.asked++;
      return inner.vote(req);
    },
  };
  return voter;
}

async function setup() {
  const clock = new ManualClock(0);
  const pools = new MemoryPoolStore();
  const profiles = new MemoryProfileStore();
  const pool = createPool("p", makeSpec({ id: "h0", provenance: { direction: "base" } }), [
    makeSpec({ id: "sib-a", provenance: { direction: "contract" } }),
    makeSpec({ id: "sib-b", provenance: { direction: "recovery" } }),
  ]);
  await pools.put(pool);
  const voter = countingVoter();
  let n = 0;
  const cache = new MemoryDecisionCache(clock, { maxEntries: 100, ttlMs: 60_000 });
  const deps = {
    pools,
    profiles,
    decisions: new MemoryDecisionStore(),
    voters: [voter],
    clock,
    newId: () => `dec_${++n}`,
    decisionCache: cache,
  };
  return { deps, voter, clock, profiles, cache };
}
const request = RouteRequest.parse({
  poolId: "p",
  task: { id: "t1", family: "app", tags: ["app"] },
  failureTags: ["unauthorized"],
  k: 1,
});

describe("the decision cache behind /v1/route", () => {
  it("serves the same key's identical request again without voting: a new decision of its own that names the one that voted", async () => {
    // Prepare
    const { deps, voter } = await setup();
    // Act
    const first = await routeTask(request, deps, "key-a");
    const again = await routeTask(request, deps, "key-a");
    // Assess
    expect(voter.asked).toBe(1);
    expect(again).toMatchObject({
      id: "dec_2",
      keyId: "key-a",
      cachedFrom: "dec_1",
      chosen: first.chosen,
      ballots: first.ballots,
    });
    expect(await deps.decisions.get("dec_2")).toMatchObject({ keyId: "key-a", cachedFrom: "dec_1" });
  });

  it("never serves one key a decision another key's request made (no hit, no cachedFrom: a key learns nothing of another's requests)", async () => {
    const { deps, voter } = await setup();
    const a = await routeTask(request, deps, "key-a");
    const b = await routeTask(request, deps, "key-b");
    expect(voter.asked).toBe(2);
    expect(b.cachedFrom).toBeUndefined();
    expect(JSON.stringify(b)).not.toContain(a.id);
  });

  it("one key filling the cache evicts its own entries, not another key's", async () => {
    const clock = new ManualClock(0);
    const cache = new MemoryDecisionCache(clock, { maxEntries: 6, maxPerKey: 4, ttlMs: 60_000 });
    const d = (id: string) => ({ id }) as never;
    cache.set("key-a", "a1", d("a1"));
    for (let i = 0; i < 20; i++) cache.set(`key-b${i % 3}`, `b${i}`, d(`b${i}`));
    expect(cache.get("key-a", "a1")).toEqual({ id: "a1" });
    for (let i = 0; i < 20; i++) cache.set("key-b", `x${i}`, d(`x${i}`));
    expect(cache.get("key-a", "a1")).toEqual({ id: "a1" });
  });

  it("votes again for another request, after new evidence changes the profiles, and once the entry's time is up", async () => {
    const { deps, voter, clock, profiles } = await setup();
    await routeTask(request, deps);
    await routeTask({ ...request, k: 2 }, deps);
    expect(voter.asked).toBe(2);
    await profiles.put("p", makeProfile("sib-a", { policyVersion: 1 }));
    await routeTask(request, deps);
    expect(voter.asked).toBe(3);
    clock.advance(60_001);
    await routeTask(request, deps);
    expect(voter.asked).toBe(4);
  });
});
