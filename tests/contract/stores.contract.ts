import { describe, expect, it } from "vitest";
import { ManualClock, type Clock, ConflictError, createPool, type PoolStore, createRng, type Rollout, type RolloutStore } from "@harness-s/core";
import { zeroUsage, type UsageMeter } from "@harness-s/core/billing";
import { emptyProfile, type ProfileLedger, type ProfileStore } from "@harness-s/core/profile";
import { newApiKey, type ApiKeyStore } from "@harness-s/core/access";
import type { DecisionStore } from "@harness-s/core/routing";
import type { RescueJobStore, PolicyEndpointRecord, PolicyEndpointStore, RescueSlots } from "@harness-s/core/rescue";
import type { RoutingDecision, BallotStore } from "@harness-s/core/voting";
import type { ExperimentRecord, ExperimentStore, ExperimentStepStore } from "@harness-s/core/experiment";
import { makeSpec } from "../factories.ts";

export interface Stores {
  pools: PoolStore;
  profiles: ProfileStore & ProfileLedger;
  decisions: DecisionStore;
  keys: ApiKeyStore;
  meter: UsageMeter;
  rollouts: RolloutStore;
  jobs: RescueJobStore;
  ballots: BallotStore;
  experiments: ExperimentStore;
  experimentSteps: ExperimentStepStore;
  endpoints: PolicyEndpointStore;
  rescueSlots: RescueSlots;
}

function experiment(id: string, over: Partial<ExperimentRecord> = {}): ExperimentRecord {
  return {
    id,
    keyId: "k1",
    request: { arms: ["grpo"], seeds: [1], train: {}, evalSamples: 3, protocol: "test", budget: { rollouts: 10 } },
    status: "queued",
    createdAt: 1,
    updatedAt: 1,
    attempts: 0,
    progress: { done: 0, total: 20, label: "queued" },
    usage: { rollouts: 0, computeMs: 0 },
    results: [],
    baselines: [],
    units: [],
    ...over,
  };
}

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
      observation: { family: "app", tools: ["submit"], event: noise(), facts: [], taskTags: [], hints: [], baseHints: [], failedActions: [], turnsLeft: 1 },
      action: "submit",
      logProb: -0.5,
      forced: false,
      intercepted: false,
      result: "ok",
    })),
  };
}

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

/** The behaviour every store implementation must share; `fresh` returns empty stores. */
export function storeContract(name: string, fresh: (clock?: Clock) => Promise<Stores>): void {
  describe(`store contract: ${name}`, () => {
    it("pools: round-trips, is idempotent for the same content, immutable for different content", async () => {
      const s = await fresh();
      const pool = createPool("p1", makeSpec(), [makeSpec({ id: "sib-a", provenance: { direction: "recovery" } })]);
      await s.pools.put(pool);
      await s.pools.put(pool);
      expect(await s.pools.get("p1")).toEqual(pool);
      const other = createPool("p1", makeSpec(), [makeSpec({ id: "sib-b", provenance: { direction: "recovery" } })]);
      await expect(s.pools.put(other)).rejects.toBeInstanceOf(ConflictError);
      expect(await s.pools.get("missing")).toBeUndefined();
      await s.pools.put(createPool("p0", makeSpec(), [makeSpec({ id: "sib-c", provenance: { direction: "recon" } })]));
      expect((await s.pools.list()).map((p) => p.id)).toEqual(["p0", "p1"]);
    });

    it("profiles: one per harness per pool, replaced on put", async () => {
      const s = await fresh();
      await s.profiles.put("p1", emptyProfile("sib-a", 1));
      await s.profiles.put("p1", { ...emptyProfile("sib-a", 2), byFamily: { app: { attempts: 3, successes: 1 } } });
      await s.profiles.put("p1", emptyProfile("sib-b", 2));
      await s.profiles.put("p2", emptyProfile("sib-a", 9));
      const set = await s.profiles.get("p1");
      expect(Object.keys(set).sort()).toEqual(["sib-a", "sib-b"]);
      expect(set["sib-a"]!.policyVersion).toBe(2);
      expect(set["sib-a"]!.byFamily.app).toEqual({ attempts: 3, successes: 1 });
      expect(await s.profiles.get("none")).toEqual({});
    });

    it("ledger: applies each message id once, and loses no update under concurrent writers", async () => {
      const s = await fresh();
      const bump = (p: Parameters<Parameters<ProfileLedger["applyOnce"]>[3]>[0]) => ({ ...p, byFamily: { app: { attempts: (p.byFamily.app?.attempts ?? 0) + 1, successes: 0 } } });
      expect(await s.profiles.applyOnce("m1", "p", "h", bump)).toBe("applied");
      expect(await s.profiles.applyOnce("m1", "p", "h", bump)).toBe("duplicate");
      await Promise.all(Array.from({ length: 6 }, (_, i) => s.profiles.applyOnce(`c${i}`, "p", "h", bump)));
      expect((await s.profiles.get("p")).h!.byFamily.app!.attempts).toBe(7);
    });

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
    }, 60_000);

    it("experiment steps: listed per run in (seed, arm, step) order, filtered, first write wins", async () => {
      const s = await fresh();
      const step = (seed: number, arm: string, n: number, meanReward = 0) => ({
        experimentId: "e1",
        seed,
        arm,
        step: n,
        policyVersion: n,
        rollouts: { train: 8 * n, rescue: 0, resample: 0, reanchor: 0, total: 8 * n },
        groups: [{ taskId: "t1", meanReward, allFail: meanReward === 0, outcome: "replaced" as const, chosen: ["sib-a", "sib-b"] }],
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
      expect(all.map((x) => `${x.seed}/${x.arm}/${x.step}`)).toEqual(["1/grpo/1", "1/harness-s/1", "1/harness-s/2", "1/harness-s-random/1", "2/grpo/1", "10/grpo/1"]);
      expect(all[0]!.groups[0]).toEqual({ taskId: "t1", meanReward: 0, allFail: true, outcome: "replaced", chosen: ["sib-a", "sib-b"] });
      const label = (xs: { seed: number; arm: string; step: number }[]) => xs.map((x) => `${x.seed}/${x.arm}/${x.step}`);
      expect(label(await s.experimentSteps.list("e1", { arm: "harness-s", seed: 1 }))).toEqual(["1/harness-s/1", "1/harness-s/2"]);
      expect(label(await s.experimentSteps.list("e1", { seed: 1 }))).toEqual(["1/grpo/1", "1/harness-s/1", "1/harness-s/2", "1/harness-s-random/1"]);
      expect(label(await s.experimentSteps.list("e1", { arm: "grpo" }))).toEqual(["1/grpo/1", "2/grpo/1", "10/grpo/1"]);
      expect(await s.experimentSteps.list("other")).toEqual([]);
    });

    it("ballots: keyed by (ballot key, voter), the first ballot wins", async () => {
      const s = await fresh();
      expect(await s.ballots.put("b1", { voterId: "v1", ranking: ["a", "b"], scores: { a: 2, b: 1 } })).toBe("stored");
      expect(await s.ballots.put("b1", { voterId: "v1", ranking: ["b", "a"] })).toBe("duplicate");
      expect(await s.ballots.put("b1", { voterId: "v2", ranking: ["b"] })).toBe("stored");
      expect((await s.ballots.get("b1", "v1"))!.ranking).toEqual(["a", "b"]);
      expect((await s.ballots.get("b1", "v2"))!.ranking).toEqual(["b"]);
      expect(await s.ballots.get("b2", "v1")).toBeUndefined();
    });

    it("experiments: created once; claimed by one coordinator at a time; re-claimable after the lease expires", async () => {
      const s = await fresh();
      await s.experiments.create(experiment("e1"));
      await expect(s.experiments.create(experiment("e1"))).rejects.toBeInstanceOf(ConflictError);
      const claims = await Promise.all([s.experiments.claim("e1", 100, 200), s.experiments.claim("e1", 100, 200)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(claims.find(Boolean)!.status).toBe("running");
      expect(await s.experiments.claim("e1", 150, 250)).toBeUndefined();
      expect((await s.experiments.claim("e1", 201, 300))!.leaseUntil).toBe(300);
      await s.experiments.save(experiment("e1", { status: "done", attempts: 2, usage: { rollouts: 10, computeMs: 5 } }));
      expect(await s.experiments.claim("e1", 10_000, 20_000)).toBeUndefined();
      expect(await s.experiments.get("e1")).toMatchObject({ status: "done", attempts: 2, usage: { rollouts: 10, computeMs: 5 } });
      expect(await s.experiments.claim("missing", 1, 2)).toBeUndefined();
      expect(await s.experiments.get("missing")).toBeUndefined();
    });

    it("rescue jobs: created once, read back", async () => {
      const s = await fresh();
      const job = { id: "rsc_1", poolId: "p", taskId: "t", decisionId: "d", chosen: ["a", "b"], rolloutsPerHarness: 2, expected: 4, createdAt: 1 };
      await s.jobs.create(job);
      expect(await s.jobs.get("rsc_1")).toEqual(job);
      await expect(s.jobs.create(job)).rejects.toBeInstanceOf(ConflictError);
      expect(await s.jobs.get("rsc_2")).toBeUndefined();
    });

    it("rescue jobs: a cancel keeps its first time, and cancelling an unknown job changes nothing", async () => {
      const s = await fresh();
      await s.jobs.create({ id: "rsc_c", poolId: "p", taskId: "t", decisionId: "d", chosen: ["a"], rolloutsPerHarness: 1, expected: 1, createdAt: 1 });
      await s.jobs.cancel("rsc_c", 50);
      await s.jobs.cancel("rsc_c", 90);
      expect((await s.jobs.get("rsc_c"))!.cancelledAt).toBe(50);
      await s.jobs.cancel("rsc_none", 50);
      expect(await s.jobs.get("rsc_none")).toBeUndefined();
    });

    it("rescue slots: holds count until released or expired, and concurrent holds never take a key past its limit", async () => {
      const s = await fresh();
      expect(await s.rescueSlots.hold("k1", "r1", 60, 100, 0, 1_000)).toBe(true);
      expect(await s.rescueSlots.hold("k1", "r2", 50, 100, 10, 1_000)).toBe(false);
      expect(await s.rescueSlots.hold("k2", "r2", 50, 100, 10, 1_000)).toBe(true); // another key's own
      expect(await s.rescueSlots.held("k1", 10)).toBe(60);
      await s.rescueSlots.release("k1", "r1");
      await s.rescueSlots.release("k1", "never-held");
      expect(await s.rescueSlots.hold("k1", "r2", 50, 100, 20, 500)).toBe(true);
      // r2's hold expires at 500: at 600 it no longer counts.
      expect(await s.rescueSlots.hold("k1", "r3", 100, 100, 600, 2_000)).toBe(true);
      expect(await s.rescueSlots.held("k1", 600)).toBe(100);
      const taken = await Promise.all(Array.from({ length: 6 }, (_, i) => s.rescueSlots.hold("k3", `c${i}`, 30, 100, 0, 1_000)));
      expect(taken.filter(Boolean)).toHaveLength(3);
      expect(await s.rescueSlots.held("k3", 0)).toBe(90);
    });

    it("rescue jobs: spend adds up across concurrent slots, and an unknown job's is dropped", async () => {
      const s = await fresh();
      await s.jobs.create({ id: "rsc_s", poolId: "p", taskId: "t", decisionId: "d", chosen: ["a"], rolloutsPerHarness: 8, expected: 8, createdAt: 1 });
      await Promise.all(Array.from({ length: 8 }, (_, i) => s.jobs.addSpend("rsc_s", { policyTokens: 10 + i, policyMs: 1.5, environmentMs: 2.5 })));
      expect(await s.jobs.get("rsc_s")).toMatchObject({ spentPolicyTokens: 108, spentPolicyMs: 12, spentEnvironmentMs: 20 });
      await s.jobs.addSpend("rsc_none", { policyTokens: 1, policyMs: 1, environmentMs: 1 });
      expect(await s.jobs.get("rsc_none")).toBeUndefined();
    });

    it("decisions: the first write of an id wins (duplicate deliveries change nothing)", async () => {
      const s = await fresh();
      await s.decisions.put(decision("d1", ["a", "b"]));
      await s.decisions.put(decision("d1", ["c"]));
      expect((await s.decisions.get("d1"))!.chosen).toEqual(["a", "b"]);
      expect(await s.decisions.get("d2")).toBeUndefined();
    });

    it("api keys: found by the hash of the secret only", async () => {
      const s = await fresh();
      const { record } = newApiKey("k1", ["route"], 5);
      await s.keys.put(record);
      expect(await s.keys.findByHash(record.hash)).toEqual(record);
      expect(await s.keys.findByHash("0".repeat(64))).toBeUndefined();
    });

    it("usage: adds atomically under concurrent calls; totals per key and job, rows per key and UTC day", async () => {
      const clock = new ManualClock(Date.parse("2026-03-01T23:59:00Z"));
      const s = await fresh(clock);
      await Promise.all(Array.from({ length: 20 }, () => s.meter.add("k1", { requests: 1, ballots: 3 })));
      clock.advance(120_000); // past midnight: the next writes land on 2026-03-02
      await s.meter.add("k1", { rollouts: 4, computeMs: 1.5, dynamoWriteUnits: 2.5, sqsRequests: 3 }, { jobId: "exp_1" });
      await s.meter.add("k2", { requests: 1 });
      expect(await s.meter.get("k1")).toEqual({ ...zeroUsage, requests: 20, ballots: 60, rollouts: 4, computeMs: 1.5, dynamoWriteUnits: 2.5, sqsRequests: 3 });
      expect(await s.meter.job("exp_1")).toEqual({ ...zeroUsage, rollouts: 4, computeMs: 1.5, dynamoWriteUnits: 2.5, sqsRequests: 3 });
      expect(await s.meter.get("nobody")).toEqual(zeroUsage);
      expect(await s.meter.byDay({ keyId: "k1", from: "2026-03-01", to: "2026-03-02" })).toEqual([
        { keyId: "k1", day: "2026-03-01", usage: { ...zeroUsage, requests: 20, ballots: 60 } },
        { keyId: "k1", day: "2026-03-02", usage: { ...zeroUsage, rollouts: 4, computeMs: 1.5, dynamoWriteUnits: 2.5, sqsRequests: 3 } },
      ]);
      expect((await s.meter.byDay({ keyId: "k1", from: "2026-03-02", to: "2026-03-31" })).map((r) => r.day)).toEqual(["2026-03-02"]);
      expect((await s.meter.byDay({ from: "2026-03-02", to: "2026-03-02" })).map((r) => r.keyId)).toEqual(["k1", "k2"]);
      expect(await s.meter.byDay({ keyId: "k2", from: "2026-03-01", to: "2026-03-01" })).toEqual([]);
    });

    it("policy endpoints: each key's apart; replaced on put, deleted once", async () => {
      const s = await fresh();
      const rec = (keyId: string, id: string, url: string): PolicyEndpointRecord => ({
        keyId,
        id,
        kind: "protocol-v2",
        url,
        policy: "p1",
        secretHeader: { name: "x-api-key", value: "s3cret" },
        createdAt: 1,
        probe: { weightVersion: 2, checkedAt: 1 },
      });
      await s.endpoints.put(rec("k1", "e1", "http://a"), 100);
      await s.endpoints.put(rec("k1", "e1", "http://b"), 100);
      await s.endpoints.put(rec("k2", "e1", "http://c"), 100);
      expect(await s.endpoints.get("k1", "e1")).toEqual(rec("k1", "e1", "http://b"));
      expect((await s.endpoints.list("k1")).map((e) => e.url)).toEqual(["http://b"]);
      expect((await s.endpoints.list("k2")).map((e) => e.url)).toEqual(["http://c"]);
      expect(await s.endpoints.delete("k1", "e1")).toBe(true);
      expect(await s.endpoints.delete("k1", "e1")).toBe(false);
      expect(await s.endpoints.get("k2", "e1")).toBeDefined();
      expect(await s.endpoints.get("k1", "e1")).toBeUndefined();
    });
  });
}
