import { describe, expect, it } from "vitest";
import { addEvidence, blendProfiles, emptyProfile, reanchor, type ProfileSet } from "@harness-s/core/profile";
import { auditDecision } from "@harness-s/core/training";
import { createPool, createRng, hash32, shuffled, type HarnessSpec, type Task } from "@harness-s/core";
import type { RoutingDecision } from "@harness-s/core/voting";
import { makeProfile, makeRollout, makeSpec, makeTask } from "../factories.ts";

const siblings = ["sib-a", "sib-b", "sib-c"].map((id) => makeSpec({ id, provenance: { direction: "contract" } }));
const pool = createPool("p", makeSpec(), siblings);
const tasks = Array.from({ length: 10 }, (_, i) => makeTask({ id: `t${i}` }));

function runner(h0Succeeds: (t: Task) => boolean) {
  let calls = 0;
  const run = async (task: Task, h: HarnessSpec, seed: number) => {
    calls++;
    const success = h.id === "h0" ? h0Succeeds(task) : h.id === "sib-b";
    return makeRollout({ taskId: task.id, harnessId: h.id, seed, success, reward: success ? 1 : 0 });
  };
  return { run, calls: () => calls };
}

describe("reanchor", () => {
  it("never spends more than its budget and reports exactly what it spent", async () => {
    for (const budget of [0, 1, 3, 4, 9, 17, 40]) {
      const r = runner(() => false);
      const out = await reanchor({
        probeTasks: tasks,
        pool,
        profiles: {},
        budget,
        keep: 0.5,
        policyVersion: 3,
        step: 5,
        rng: createRng(1),
        runRollout: r.run,
      });
      expect(out.spent).toBe(r.calls());
      expect(out.spent).toBeLessThanOrEqual(budget);
    }
  });

  it("spends one rollout per task when H0 succeeds, and 1 + siblings when it fails", async () => {
    const ok = runner(() => true);
    const a = await reanchor({
      probeTasks: tasks,
      pool,
      profiles: {},
      budget: 100,
      keep: 0.5,
      policyVersion: 1,
      step: 1,
      rng: createRng(1),
      runRollout: ok.run,
    });
    expect(a.spent).toBe(10);
    const bad = runner(() => false);
    const b = await reanchor({
      probeTasks: tasks,
      pool,
      profiles: {},
      budget: 8,
      keep: 0.5,
      policyVersion: 1,
      step: 1,
      rng: createRng(1),
      runRollout: bad.run,
    });
    expect(b.spent).toBe(8);
    expect(b.probedTasks).toBe(2);
  });

  it("measures fresh rescue utility and stamps the profiles with the policy version", async () => {
    const r = runner(() => false);
    const out = await reanchor({
      probeTasks: tasks,
      pool,
      profiles: {},
      budget: 40,
      keep: 0.5,
      policyVersion: 7,
      step: 10,
      rng: createRng(1),
      runRollout: r.run,
    });
    expect(out.utilities["sib-b"]).toBe(1);
    expect(out.utilities["sib-a"]).toBe(0);
    expect(out.profiles["sib-b"]!.policyVersion).toBe(7);
    expect(out.failing).toHaveLength(out.probedTasks);
  });

  it("probes last time's failures first", async () => {
    const order: string[] = [];
    const run = async (task: Task, h: HarnessSpec) => {
      if (h.id === "h0") order.push(task.id);
      return makeRollout({ taskId: task.id, harnessId: h.id, success: true, reward: 1 });
    };
    await reanchor({
      probeTasks: tasks,
      pool,
      profiles: {},
      budget: 3,
      keep: 0.5,
      policyVersion: 1,
      step: 1,
      rng: createRng(2),
      runRollout: run,
      priority: ["t7", "t3"],
    });
    expect(order.slice(0, 2).sort()).toEqual(["t3", "t7"]);
  });
});

/** The oracle: the algorithm as it was, one probe task at a time (H0, then its siblings when it failed). */
async function oneAtATime(input: Parameters<typeof reanchor>[0]) {
  const fresh: ProfileSet = {};
  for (const h of [input.pool.base, ...input.pool.siblings])
    fresh[h.id] = emptyProfile(h.id, input.policyVersion, input.step);
  let spent = 0;
  let probedTasks = 0;
  const failing: string[] = [];
  for (const task of shuffled(input.probeTasks, input.rng)) {
    if (spent + 1 > input.budget) break;
    const seed = hash32(`reanchor:${input.step}:${task.id}`, input.rng.seed);
    const base = await input.runRollout(task, input.pool.base, seed);
    spent++;
    probedTasks++;
    fresh[input.pool.base.id] = addEvidence(fresh[input.pool.base.id]!, base, { rescueOf: [], taskTags: task.tags });
    if (base.success) continue;
    failing.push(task.id);
    if (spent + input.pool.siblings.length > input.budget) break;
    for (const [i, s] of input.pool.siblings.entries()) {
      const r = await input.runRollout(task, s, seed + i + 1);
      spent++;
      fresh[s.id] = addEvidence(fresh[s.id]!, r, { rescueOf: base.failureTags, taskTags: task.tags });
    }
  }
  const profiles: ProfileSet = {};
  for (const [id, p] of Object.entries(fresh))
    profiles[id] = input.profiles[id] ? blendProfiles(input.profiles[id]!, p, input.keep) : p;
  return { profiles, spent, probedTasks, failing };
}

describe("reanchor, probes in flight together", () => {
  it("spends, probes and measures exactly what one task at a time does, with the certain probes at once", async () => {
    for (let pattern = 0; pattern < 42; pattern++) {
      const budget = [0, 1, 4, 5, 9, 13, 40][pattern % 7]!;
      const outcome = (task: Task, h: HarnessSpec, seed: number) => {
        const success =
          h.id === "h0" ? hash32(task.id, pattern) % 3 === 0 : hash32(`${task.id}/${h.id}`, pattern) % 2 === 0;
        return makeRollout({
          taskId: task.id,
          harnessId: h.id,
          seed,
          success,
          reward: success ? 1 : 0,
          failureTags: success ? [] : [`app/x${seed % 2}`],
        });
      };
      const calls: string[] = [];
      let inFlight = 0;
      let most = 0;
      const concurrent = async (task: Task, h: HarnessSpec, seed: number) => {
        calls.push(`${task.id}/${h.id}/${seed}`);
        const h0 = h.id === "h0" ? 1 : 0;
        inFlight += h0;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 0));
        inFlight -= h0;
        return outcome(task, h, seed);
      };
      const sequentialCalls: string[] = [];
      const sequential = async (task: Task, h: HarnessSpec, seed: number) => {
        sequentialCalls.push(`${task.id}/${h.id}/${seed}`);
        return outcome(task, h, seed);
      };
      const input = {
        probeTasks: tasks,
        pool,
        profiles: { "sib-a": makeProfile("sib-a") },
        budget,
        keep: 0.5,
        policyVersion: 2,
        step: 5,
      };
      const got = await reanchor({ ...input, rng: createRng(pattern), runRollout: concurrent });
      const want = await oneAtATime({ ...input, rng: createRng(pattern), runRollout: sequential });
      expect({ spent: got.spent, probed: got.probedTasks, failing: got.failing }).toEqual({
        spent: want.spent,
        probed: want.probedTasks,
        failing: want.failing,
      });
      expect([...calls].sort()).toEqual([...sequentialCalls].sort());
      expect(JSON.stringify(got.profiles)).toBe(JSON.stringify(want.profiles));
      if (budget >= 9) expect(most).toBeGreaterThan(1); // H0 probes of several tasks at once
    }
  });
});

describe("blendProfiles", () => {
  it("rescales old evidence only where fresh evidence exists", () => {
    const old = makeProfile("s", {
      byFailureTag: { "app/x": { attempts: 10, successes: 10 }, "app/y": { attempts: 4, successes: 0 } },
    });
    const fresh = makeProfile("s", { policyVersion: 5, byFailureTag: { "app/x": { attempts: 2, successes: 0 } } });
    const b = blendProfiles(old, fresh, 0.25);
    expect(b.byFailureTag["app/x"]).toEqual({ attempts: 4.5, successes: 2.5 });
    expect(b.byFailureTag["app/y"]).toEqual({ attempts: 4, successes: 0 });
    expect(b.policyVersion).toBe(5);
  });
});

describe("auditDecision", () => {
  it("runs every sibling's trials at once and rates each sibling on its own runs", async () => {
    let inFlight = 0;
    let most = 0;
    const run = async (task: Task, h: HarnessSpec, seed: number) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 0));
      inFlight--;
      const success = h.id === "sib-b" || (h.id === "sib-c" && seed % 2 === 0);
      return makeRollout({ taskId: task.id, harnessId: h.id, seed, success, reward: success ? 1 : 0 });
    };
    const decision = { id: "d1", chosen: ["sib-b"] } as unknown as RoutingDecision;
    const audit = await auditDecision(tasks[0]!, decision, pool, 2, 10, run);
    expect(most).toBe(6);
    expect(audit.rates).toEqual({ "sib-a": 0, "sib-b": 1, "sib-c": 0.5 });
    expect(audit).toMatchObject({ rescuable: true, hit: true, rollouts: 6 });
  });
});
