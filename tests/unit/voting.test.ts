import { describe, expect, it } from "vitest";
import { ManualClock, createRng } from "@harness-s/core";
import { QuorumError } from "@harness-s/core/voting";
import {
  aggregate,
  route,
  routerOptions,
  specAffinity,
  allStatisticalVoters,
  failureTagVoter,
  type Ballot,
  type BallotRequest,
  type Voter,
} from "@harness-s/core/voting";
import { makeProfile, makeSpec } from "../factories.ts";

const candidates = ["sib-a", "sib-b", "sib-c"].map((id) => makeSpec({ id, provenance: { direction: "recovery" } }));
const input = {
  decisionId: "d1",
  task: { id: "t", family: "app", tags: ["app"] },
  candidates,
  profiles: {},
  poolVersion: "v1",
};
const fixed = (id: string, ranking: string[]): Voter => ({ id, vote: async () => ({ voterId: id, ranking }) });

describe("aggregate", () => {
  it("Borda: a unanimous ranking wins in that order", () => {
    const ballots: Ballot[] = ["x", "y", "z"].map((v) => ({ voterId: v, ranking: ["sib-b", "sib-a", "sib-c"] }));
    expect(aggregate(ballots, ["sib-a", "sib-b", "sib-c"], "borda").map((t) => t.harnessId)).toEqual([
      "sib-b",
      "sib-a",
      "sib-c",
    ]);
  });

  it("shares points between tied scores and between candidates a ballot omits", () => {
    const tally = aggregate(
      [{ voterId: "v", ranking: ["sib-a", "sib-b"], scores: { "sib-a": 1, "sib-b": 1 } }],
      ["sib-a", "sib-b", "sib-c"],
      "borda",
    );
    expect(tally.find((t) => t.harnessId === "sib-a")!.score).toBe(tally.find((t) => t.harnessId === "sib-b")!.score);
    expect(tally.find((t) => t.harnessId === "sib-c")!.score).toBe(0);
  });

  it("breaks a full tie by first places, then by id, deterministically", () => {
    const ballots: Ballot[] = [
      { voterId: "v1", ranking: ["sib-c", "sib-a"] },
      { voterId: "v2", ranking: ["sib-a", "sib-c"] },
    ];
    const once = aggregate(ballots, ["sib-c", "sib-a"], "borda").map((t) => t.harnessId);
    const reversed = aggregate([...ballots].reverse(), ["sib-a", "sib-c"], "borda").map((t) => t.harnessId);
    expect(once).toEqual(["sib-a", "sib-c"]);
    expect(reversed).toEqual(once);
  });

  it("reciprocal-rank fusion ranks by Σ 1/(60+rank)", () => {
    const ballots: Ballot[] = [
      { voterId: "v1", ranking: ["sib-a", "sib-b", "sib-c"] },
      { voterId: "v2", ranking: ["sib-b", "sib-c", "sib-a"] },
      { voterId: "v3", ranking: ["sib-b", "sib-a", "sib-c"] },
    ];
    const tally = aggregate(ballots, ["sib-a", "sib-b", "sib-c"], "rrf");
    expect(tally[0]!.harnessId).toBe("sib-b");
    expect(tally[0]!.score).toBeCloseTo(2 / 61 + 1 / 62, 12);
  });
});

describe("route", () => {
  it("picks the Top-k of a unanimous vote and records the ballots", async () => {
    const voters = [fixed("v1", ["sib-c", "sib-b", "sib-a"]), fixed("v2", ["sib-c", "sib-b", "sib-a"])];
    const d = await route(input, routerOptions({ k: 2 }), { voters, rng: createRng(1) });
    expect(d.chosen).toEqual(["sib-c", "sib-b"]);
    expect(d.ballots.map((b) => b.voterId)).toEqual(["v1", "v2"]);
    expect(d.explored).toBe(false);
  });

  it("survives a failing voter when the quorum is met, and lists the failure", async () => {
    const broken: Voter = { id: "broken", vote: async () => Promise.reject(new Error("LLM returned garbage")) };
    const voters = [fixed("v1", ["sib-a", "sib-b", "sib-c"]), fixed("v2", ["sib-a", "sib-c", "sib-b"]), broken];
    const d = await route(input, routerOptions({ k: 1 }), { voters, rng: createRng(1) });
    expect(d.chosen).toEqual(["sib-a"]);
    expect(d.failures).toEqual([{ voterId: "broken", kind: "error", reason: "LLM returned garbage" }]);
  });

  it("raises QuorumError when too few voters answer", async () => {
    const broken = (id: string): Voter => ({ id, vote: async () => Promise.reject(new Error("down")) });
    const voters = [fixed("v1", ["sib-a"]), broken("b1"), broken("b2")];
    await expect(route(input, routerOptions({ k: 1 }), { voters, rng: createRng(1) })).rejects.toThrow(QuorumError);
    await expect(
      route(input, routerOptions({ k: 1, quorum: 1 }), { voters, rng: createRng(1) }),
    ).resolves.toMatchObject({ chosen: ["sib-a"] });
  });

  it("treats a ballot naming unknown or duplicate harnesses as a failed vote", async () => {
    const voters = [
      fixed("v1", ["sib-a", "sib-b", "sib-c"]),
      fixed("liar", ["sib-z"]),
      fixed("dup", ["sib-a", "sib-a"]),
    ];
    const d = await route(input, routerOptions({ k: 1, quorum: 1 }), { voters, rng: createRng(1) });
    expect(d.failures.map((f) => f.voterId)).toEqual(["liar", "dup"]);
    expect(d.failures[0]!.reason).toMatch(/unknown harnesses sib-z/);
  });

  it("times out a slow voter on the injected clock", async () => {
    const clock = new ManualClock();
    const slow: Voter = { id: "slow", vote: () => new Promise(() => undefined) };
    const pending = route(input, routerOptions({ k: 1, quorum: 1, voterTimeoutMs: 500 }), {
      voters: [fixed("v1", ["sib-b"]), slow],
      rng: createRng(1),
      clock,
    });
    clock.advance(500);
    const d = await pending;
    expect(d.chosen).toEqual(["sib-b"]);
    expect(d.failures[0]).toMatchObject({ voterId: "slow", reason: expect.stringMatching(/within 500 ms/) });
  });

  it("explores with probability ε by swapping the last pick, reproducibly per seed", async () => {
    const voters = [fixed("v1", ["sib-a", "sib-b", "sib-c"])];
    const d1 = await route(input, routerOptions({ k: 1, exploration: 1 }), { voters, rng: createRng(3) });
    const d2 = await route(input, routerOptions({ k: 1, exploration: 1 }), { voters, rng: createRng(3) });
    expect(d1.explored).toBe(true);
    expect(d1.chosen[0]).not.toBe("sib-a");
    expect(d2.chosen).toEqual(d1.chosen);
  });
});

describe("statistical voters", () => {
  const req = (profiles: BallotRequest["profiles"], over: Partial<BallotRequest> = {}): BallotRequest => ({
    decisionId: "d",
    task: { id: "t", family: "app", tags: ["app", "bulk"] },
    failureTags: ["incomplete-results"],
    failedEvents: ["page:more", "submit:rejected"],
    candidates,
    profiles,
    k: 1,
    ...over,
  });

  it("the failure-tag voter prefers the sibling that rescued this failure tag before", async () => {
    const profiles = {
      "sib-a": makeProfile("sib-a", { byFailureTag: { "app/incomplete-results": { attempts: 10, successes: 1 } } }),
      "sib-b": makeProfile("sib-b", { byFailureTag: { "app/incomplete-results": { attempts: 10, successes: 9 } } }),
    };
    expect((await failureTagVoter.vote(req(profiles))).ranking[0]).toBe("sib-b");
  });

  it("spec affinity counts hooks on the failed group's events", () => {
    const hooked = makeSpec({
      id: "x",
      postObservation: [{ on: "page:more", hint: "next_page" }],
      provenance: { direction: "contract" },
    });
    expect(specAffinity(hooked, ["page:more"])).toBeGreaterThan(specAffinity(makeSpec(), ["page:more"]));
  });

  it("every statistical voter returns a ranking of exactly the candidates", async () => {
    for (const v of allStatisticalVoters) {
      const b = await v.vote(req({}));
      expect([...b.ranking].sort()).toEqual(["sib-a", "sib-b", "sib-c"]);
    }
  });
});

describe("diverse Top-k", () => {
  it("takes the best sibling of another direction before a second of the same", async () => {
    const mixed = [
      makeSpec({ id: "c1", provenance: { direction: "contract" } }),
      makeSpec({ id: "c2", provenance: { direction: "contract" } }),
      makeSpec({ id: "r1", provenance: { direction: "recovery" } }),
    ];
    const voters = [fixed("v", ["c1", "c2", "r1"])];
    const plain = await route({ ...input, candidates: mixed }, routerOptions({ k: 2 }), { voters, rng: createRng(1) });
    const diverse = await route({ ...input, candidates: mixed }, routerOptions({ k: 2, diverse: true }), {
      voters,
      rng: createRng(1),
    });
    expect(plain.chosen).toEqual(["c1", "c2"]);
    expect(diverse.chosen).toEqual(["c1", "r1"]);
    const all = await route({ ...input, candidates: mixed }, routerOptions({ k: 3, diverse: true }), {
      voters,
      rng: createRng(1),
    });
    expect(all.chosen).toEqual(["c1", "r1", "c2"]);
  });
});
