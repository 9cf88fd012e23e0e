import { describe, expect, it } from "vitest";
import { StalePolicyVersionError } from "@harness-s/core/dispatch";
import { systemClock, type HarnessSpec, type Task } from "@harness-s/core";
import { Prices, PriceList } from "@harness-s/core/billing";
import { budgetedPricer, quoteRequest } from "@harness-s/core/quoting";
import { mutationProposer } from "@harness-s/core/evolution";
import type { CallerPolicies, CallerSource } from "@harness-s/core/dispatch";
import type { RolloutSpend } from "@harness-s/core/callers";
import {
  PoolEvolveRequest,
  plannedEvolutionRollouts,
  poolsVisibleTo,
  runPoolEvolution,
  startPoolEvolution,
  type CallerProposerContext,
  type PoolEvolutionRecord,
} from "@harness-s/core/pools";
import {
  MemoryPoolEvolutionStore,
  MemoryPoolStore,
  MemoryProfileStore,
  MemoryQueue,
  MemoryUsageMeter,
} from "@harness-s/adapters/stores";
import { makeRollout } from "../factories.ts";

// Issue 55, item 4: a pool evolved for a caller's environment, as a job. Here the caller's
// endpoint and environment are a stub (a rollout succeeds on the dev tasks `solves` names when the
// harness warns about its budget, the budget direction's edit; H0 fails them all); the real
// endpoint, environment and HTTP API run in tests/integration/pool-evolution.test.ts.
const tool = (name: string, submit = false) => ({
  name,
  description: `${name} does it`,
  parameters: { type: "object", properties: {} },
  submit,
});
const devTask = (id: string) => ({
  id,
  family: "app",
  tags: [],
  instruction: `do ${id}`,
  tools: [tool("search"), tool("submit", true)],
  reset: { row: `secret-${id}` },
});
const request = (over: Record<string, unknown> = {}) =>
  PoolEvolveRequest.parse({
    name: "mine",
    endpoint: "ep",
    environment: { kind: "openenv", url: "https://envs.example.com/" },
    system: "Solve it.",
    devTasks: ["t1", "t2", "t3"].map(devTask),
    evolution: { directions: ["budget", "loop-breaking"], rounds: 1, candidatesPerRound: 2, trials: 1, poolSize: 2 },
    ...over,
  });

/** Caller policies over a stub environment; what each runner was built for and every rollout's harness are kept. */
function stubCallers(solves: (task: Task, spec: HarnessSpec) => boolean, opts: { fail?: Error } = {}) {
  const sources: CallerSource[] = [];
  const callers: CallerPolicies = {
    runner: async (source, onSpend?: (s: RolloutSpend) => void) => {
      sources.push(source as CallerSource);
      return async (task, spec, seed) => {
        if (opts.fail) throw opts.fail;
        onSpend?.({ policyTokens: 10, policyMs: 5, environmentMs: 3 });
        const success = solves(task, spec);
        return makeRollout({
          id: `${task.id}-${spec.id}-${seed}`,
          taskId: task.id,
          family: task.family,
          harnessId: spec.id,
          success,
          reward: success ? 1 : 0,
        });
      };
    },
    datums: async () => [],
    currentVersion: async () => 7,
    checkEnvironment: async () => undefined,
    checkEndpoint: async () => undefined,
  };
  return { callers, sources };
}

async function started(callers: CallerPolicies, req = request()) {
  const evolutions = new MemoryPoolEvolutionStore();
  const coordinator = new MemoryQueue();
  const meter = new MemoryUsageMeter();
  const price = (r: typeof req) =>
    budgetedPricer({ meter, tariff: Prices.parse({}), priceList: PriceList.parse({}) }, { id: "k-owner" })(
      { pool: r },
      r.budget?.usd,
    );
  const record = await startPoolEvolution(req, "k-owner", {
    evolutions,
    coordinator,
    callers,
    clock: systemClock,
    newId: () => "pev_1",
    price,
  });
  return { evolutions, coordinator, meter, record, pools: new MemoryPoolStore(), profiles: new MemoryProfileStore() };
}

const warnsOnBudget = (task: Task, spec: HarnessSpec) => spec.budget.warnAt !== undefined && task.id !== "t3";

describe("pool evolution for a caller's environment (issue 55, item 4)", () => {
  it("is asked for as a job: pinned to the endpoint's version, quoted, queued for the coordinator", async () => {
    const { callers } = stubCallers(warnsOnBudget);
    const { record, coordinator, evolutions } = await started(callers);
    expect(record).toMatchObject({
      id: "pev_1",
      keyId: "k-owner",
      status: "queued",
      weightVersion: 7,
      attempts: 0,
      progress: { done: 0, total: 2 },
    });
    expect(record.quote?.rollouts).toBe(plannedEvolutionRollouts(record.request));
    expect(plannedEvolutionRollouts(record.request)).toBe(3 * 1 * (1 + 2 * 1 * 2));
    expect(coordinator.take()).toEqual([
      {
        v: 1,
        id: "pool-evolution:pev_1",
        type: "pool.evolve.requested",
        body: { evolutionId: "pev_1" },
        payer: { keyId: "k-owner", jobId: "pev_1" },
      },
    ]);
    expect((await evolutions.get("pev_1"))?.status).toBe("queued");
    const q = await quoteRequest(
      { pool: record.request },
      { meter: new MemoryUsageMeter(), tariff: Prices.parse({}), priceList: PriceList.parse({}) },
    );
    expect(q).toMatchObject({ rollouts: 15, caps: { plannedRollouts: 15, rollouts: 500, binding: [] } });
  });

  it("evolves a frozen pool the key owns under the job's id, with profiles, metered; a redelivery is a no-op; other keys do not see it", async () => {
    const { callers, sources } = stubCallers(warnsOnBudget);
    const s = await started(callers);
    const done = (await runPoolEvolution("pev_1", { ...s, callers, clock: systemClock })) as PoolEvolutionRecord;
    expect(done.error).toBeUndefined();
    expect(done).toMatchObject({
      status: "done",
      attempts: 1,
      pool: { id: "pev_1" },
      outcome: { proposer: "embedded-mutation", h0Failures: ["t1", "t2", "t3"] },
    });
    // Every dev task runs at the caller's endpoint, at the pinned version, in its environment.
    expect(sources.map((x) => [x.task.id, x.weightVersion, x.endpoint, x.keyId, x.environment.kind])).toEqual(
      ["t1", "t2", "t3"].map((t) => [t, 7, "ep", "k-owner", "openenv"]),
    );
    const pool = (await s.pools.get("pev_1"))!;
    expect(pool.owner).toBe("k-owner");
    expect(pool.siblings.length).toBeGreaterThan(0);
    expect(pool.siblings.every((sib) => sib.budget.warnAt !== undefined)).toBe(true);
    expect(done.outcome!.repairSets[pool.siblings[0]!.id]).toEqual(["t1", "t2"]);
    expect(Object.keys(await s.profiles.get("pev_1")).sort()).toEqual(["h0", ...pool.siblings.map((x) => x.id)].sort());
    // Metered to the key and the job: every rollout, its tokens and time at the caller's side.
    const rollouts = done.usage.rollouts;
    expect(rollouts).toBeGreaterThan(3);
    expect(await s.meter.job("pev_1")).toMatchObject({
      rollouts,
      policyTokens: 10 * rollouts,
      environmentMs: 3 * rollouts,
    });
    expect(await runPoolEvolution("pev_1", { ...s, callers, clock: systemClock })).toBe("duplicate");
    // Issue 71: a delivery while another attempt holds the lease (a coordinator killed mid-evolution) asks to look
    // again once the lease lapses; after the job ended, a delivery asks for nothing.
    const again = new MemoryQueue();
    const held = await started(callers);
    await held.evolutions.claim("pev_1", systemClock.now(), systemClock.now() + 30_000);
    expect(await runPoolEvolution("pev_1", { ...held, callers, clock: systemClock, lookAgainOn: again })).toBe(
      "duplicate",
    );
    expect(again.take().map((m) => m.type)).toEqual(["pool.evolve.requested"]);
    expect(again.delays[0]).toBeGreaterThanOrEqual(30);
    expect(await runPoolEvolution("pev_1", { ...s, callers, clock: systemClock, lookAgainOn: again })).toBe(
      "duplicate",
    );
    expect(again.take()).toEqual([]);
    // Visible to its key and admin keys only.
    const as = (id: string, scopes: string[] = ["rescues"]) => poolsVisibleTo(s.pools, { id, scopes });
    expect(await as("k-owner").get("pev_1")).toBeDefined();
    expect(await as("k-admin", ["admin"]).get("pev_1")).toBeDefined();
    expect(await as("k-other").get("pev_1")).toBeUndefined();
    expect(await as("k-other").list()).toEqual([]);
  });

  it("fails with its code and why: no sibling repairs a dev task (EVOLUTION_FAILED), a trainer that moved on (STALE_POLICY_VERSION)", async () => {
    const none = stubCallers(() => false);
    const s1 = await started(none.callers);
    const failed = (await runPoolEvolution("pev_1", {
      ...s1,
      callers: none.callers,
      clock: systemClock,
    })) as PoolEvolutionRecord;
    expect(failed).toMatchObject({
      status: "failed",
      error: {
        code: "EVOLUTION_FAILED",
        message: expect.stringMatching(/^no sibling repaired 1 of H0's 3 failing dev tasks/),
      },
    });
    expect(await s1.pools.get("pev_1")).toBeUndefined();
    const stale = stubCallers(warnsOnBudget, { fail: new StalePolicyVersionError(8, 7) });
    const s2 = await started(stale.callers);
    const refused = (await runPoolEvolution("pev_1", {
      ...s2,
      callers: stale.callers,
      clock: systemClock,
    })) as PoolEvolutionRecord;
    expect(refused).toMatchObject({ status: "failed", error: { code: "STALE_POLICY_VERSION" } });
  });

  it("uses the configured proposer (the LLM one where a deployment sets it), shown the caller's tools and kept from quoting its dev tasks", async () => {
    const { callers } = stubCallers(warnsOnBudget);
    const s = await started(callers);
    const seen: CallerProposerContext[] = [];
    const proposer = (context: CallerProposerContext) => {
      seen.push(context);
      return { ...mutationProposer, id: "llm:stub" };
    };
    const done = (await runPoolEvolution("pev_1", {
      ...s,
      callers,
      clock: systemClock,
      proposer,
    })) as PoolEvolutionRecord;
    expect(done.outcome?.proposer).toBe("llm:stub");
    expect(seen[0]!.tools).toEqual([
      { name: "search", description: "search does it" },
      { name: "submit", description: "submit does it" },
    ]);
    expect(seen[0]!.leaks.find(["use secret-t2 here"])).toMatchObject({ taskId: "t2" });
  });

  it("bounds what a request may ask for, each bound a readable issue", () => {
    const issues = (over: Record<string, unknown>) =>
      PoolEvolveRequest.safeParse({ ...request(), ...over }).error?.issues.map(
        (i) => `${i.path.join(".")}: ${i.message}`,
      ) ?? [];
    expect(issues({ devTasks: [devTask("t1")] })).toEqual([expect.stringMatching(/^devTasks: Too small/)]);
    expect(issues({ devTasks: [devTask("t1"), devTask("t1")] })).toEqual(["devTasks: dev task ids must not repeat"]);
    expect(issues({ environment: { kind: "builtin", id: "embedded" } })[0]).toMatch(/^environment.kind/);
    expect(issues({ evolution: { maxRollouts: 5_001 } })[0]).toMatch(/^evolution.maxRollouts: Too big/);
  });
});
